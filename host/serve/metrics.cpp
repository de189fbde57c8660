#include "host/serve/metrics.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace vkf::serve {
namespace {

bool valid_name(const std::string& name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
        return false;
    }
    for (const char c : name) {
        const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!word && c != ':') {
            return false;
        }
    }
    return true;
}

}  // namespace

Metrics::Family& Metrics::declare(const std::string& name, Type type, const std::string& help) {
    if (!valid_name(name)) {
        throw Error(fmt::format("metrics: '{}' is not a Prometheus metric name", name));
    }
    const std::lock_guard lock(mutex_);
    const auto [it, added] = families_.try_emplace(name);
    Family& f = it->second;
    if (!added && f.type != type) {
        throw Error(fmt::format("metrics: '{}' was declared already as a {}", name,
                                f.type == Type::Counter ? "counter" : "gauge"));
    }
    f.type = type;
    f.help = help;
    if (added) {
        f.samples.try_emplace("", 0.0);
    }
    return f;
}

Metrics::Counter Metrics::declare_counter(const std::string& name, const std::string& help) {
    return Counter(*this, declare(name, Type::Counter, help));
}

Metrics::Gauge Metrics::declare_gauge(const std::string& name, const std::string& help) {
    return Gauge(*this, declare(name, Type::Gauge, help));
}

void Metrics::add(Family& f, double value, const std::string& labels) {
    const std::lock_guard lock(mutex_);
    if (!labels.empty()) {
        f.samples.erase("");  // a labelled family shows its labelled samples only
    }
    f.samples[labels] += value;
}

void Metrics::set(Family& f, double value, const std::string& labels) {
    const std::lock_guard lock(mutex_);
    if (!labels.empty()) {
        f.samples.erase("");
    }
    f.samples[labels] = value;
}

double Metrics::get(const Family& f, const std::string& labels) const {
    const std::lock_guard lock(mutex_);
    const auto sample = f.samples.find(labels);
    return sample == f.samples.end() ? 0.0 : sample->second;
}

void Metrics::Counter::add(double value, const std::string& labels) {
    if (!(value >= 0)) {
        throw Error(fmt::format("metrics: a counter cannot go down (add {})", value));
    }
    metrics_->add(*family_, value, labels);
}

void Metrics::Counter::set(double total, const std::string& labels) {
    metrics_->set(*family_, total, labels);
}

double Metrics::Counter::value(const std::string& labels) const {
    return metrics_->get(*family_, labels);
}

void Metrics::Gauge::set(double value, const std::string& labels) {
    metrics_->set(*family_, value, labels);
}

void Metrics::Gauge::add(double delta, const std::string& labels) {
    metrics_->add(*family_, delta, labels);
}

double Metrics::Gauge::value(const std::string& labels) const {
    return metrics_->get(*family_, labels);
}

namespace {

std::string number_text(double v) {
    if (std::isnan(v)) {
        return "NaN";
    }
    if (std::isinf(v)) {
        return v > 0 ? "+Inf" : "-Inf";
    }
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        return fmt::to_string(static_cast<long long>(v));
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}

}  // namespace

std::string Metrics::render() const {
    const std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& [name, f] : families_) {
        out += "# HELP " + name + " " + f.help + "\n";
        out += "# TYPE " + name + (f.type == Type::Counter ? " counter\n" : " gauge\n");
        for (const auto& [labels, value] : f.samples) {
            out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number_text(value) + "\n";
        }
    }
    return out;
}

}  // namespace vkf::serve
