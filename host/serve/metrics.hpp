#pragma once
// The counters and gauges vkf-server exposes at /metrics, in Prometheus' text format
// (version 0.0.4). Thread-safe: handler threads and the engine thread update it while a
// scrape renders it.
//
// A metric is declared once, by name, type and help, and updated through the handle the
// declaration returns (Counter, Gauge): callers keep the handle, so a misspelt name cannot
// compile, and a family can never show without its HELP and TYPE lines.

#include <map>
#include <mutex>
#include <string>

namespace vkf::serve {

class Metrics {
    struct Family;

public:
    // `labels` below is Prometheus' label text without braces: endpoint="chat",status="200"
    // (label values must not hold '"', '\\' or newlines: they are the server's own words). A
    // family updated with labels shows its labelled samples only; unlabelled, one sample (0
    // from its declaration on).
    class Counter {
    public:
        // `value` >= 0 (a counter only goes up; vkf::Error otherwise).
        void add(double value, const std::string& labels = "");
        // A count kept elsewhere (the pipeline's steps), copied in.
        void set(double total, const std::string& labels = "");
        double value(const std::string& labels = "") const;

    private:
        friend class Metrics;
        Counter(Metrics& metrics, Family& family) : metrics_(&metrics), family_(&family) {}
        Metrics* metrics_;
        Family* family_;
    };
    class Gauge {
    public:
        void set(double value, const std::string& labels = "");
        void add(double delta, const std::string& labels = "");
        double value(const std::string& labels = "") const;

    private:
        friend class Metrics;
        Gauge(Metrics& metrics, Family& family) : metrics_(&metrics), family_(&family) {}
        Metrics* metrics_;
        Family* family_;
    };

    Metrics() = default;
    Metrics(const Metrics&) = delete;  // the handles point into it
    Metrics& operator=(const Metrics&) = delete;

    // Declares a family (a name Prometheus accepts: [a-zA-Z_:][a-zA-Z0-9_:]*). Declaring a name
    // again with the same type gives a handle to the same family; with another type, vkf::Error.
    Counter declare_counter(const std::string& name, const std::string& help);
    Gauge declare_gauge(const std::string& name, const std::string& help);
    std::string render() const;

private:
    enum class Type { Counter, Gauge };
    struct Family {
        Type type = Type::Counter;
        std::string help;
        std::map<std::string, double> samples;  // by label text
    };
    Family& declare(const std::string& name, Type type, const std::string& help);
    void add(Family& family, double value, const std::string& labels);
    void set(Family& family, double value, const std::string& labels);
    double get(const Family& family, const std::string& labels) const;

    mutable std::mutex mutex_;
    std::map<std::string, Family> families_;  // std::map: the handles' pointers stay valid
};

}  // namespace vkf::serve
