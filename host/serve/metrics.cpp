#include "host/serve/metrics.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace vkf::serve {

void Metrics::declare(const std::string& name, Type type, const std::string& help) {
    const std::lock_guard lock(mutex_);
    Family& f = families_[name];
    f.type = type;
    f.help = help;
    f.samples.try_emplace("", 0.0);
}

Metrics::Family& Metrics::family(const std::string& name) {
    auto it = families_.find(name);
    if (it == families_.end()) {
        // A name typed wrong would otherwise publish a family without HELP or TYPE.
        throw Error("metrics: '" + name + "' was not declared");
    }
    return it->second;
}

void Metrics::add(const std::string& name, double value, const std::string& labels) {
    const std::lock_guard lock(mutex_);
    Family& f = family(name);
    if (!labels.empty()) {
        f.samples.erase("");  // a labelled family shows its labelled samples only
    }
    f.samples[labels] += value;
}

void Metrics::set(const std::string& name, double value, const std::string& labels) {
    const std::lock_guard lock(mutex_);
    Family& f = family(name);
    if (!labels.empty()) {
        f.samples.erase("");
    }
    f.samples[labels] = value;
}

double Metrics::get(const std::string& name, const std::string& labels) const {
    const std::lock_guard lock(mutex_);
    const auto it = families_.find(name);
    if (it == families_.end()) {
        return 0.0;
    }
    const auto sample = it->second.samples.find(labels);
    return sample == it->second.samples.end() ? 0.0 : sample->second;
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
