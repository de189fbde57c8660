#pragma once
// The counters and gauges vkf-server exposes at /metrics, in Prometheus' text format
// (version 0.0.4). Thread-safe: handler threads and the engine thread update it while a
// scrape renders it.

#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace vkf::serve {

class Metrics {
public:
    enum class Type { Counter, Gauge };
    // Declares a metric family; its samples show (0 for an unlabelled one) from then on.
    void declare(const std::string& name, Type type, const std::string& help);
    // `labels` is Prometheus' label text without braces: endpoint="chat",status="200"
    // (label values must not hold '"', '\\' or newlines: they are the server's own words).
    void add(const std::string& name, double value, const std::string& labels = "");
    void set(const std::string& name, double value, const std::string& labels = "");
    double get(const std::string& name, const std::string& labels = "") const;
    std::string render() const;

private:
    struct Family {
        Type type = Type::Counter;
        std::string help;
        std::map<std::string, double> samples;  // by label text
    };
    Family& family(const std::string& name);
    mutable std::mutex mutex_;
    std::map<std::string, Family> families_;
};

}  // namespace vkf::serve
