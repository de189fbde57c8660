#pragma once
// vkf-bench result files: one JSON document per run, carrying everything needed to
// compare runs made on different machines (device, driver, API, effective limits, the
// tile plan of every result, vkformer version and commit, date, command line and the raw
// repetitions). The schema is documented in docs/FORMATS.md, "Benchmark result files";
// kSchemaVersion changes whenever a reader of the previous version would misread a file.

#include "host/io/json.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace vkf::bench {

inline constexpr const char* kSchemaName = "vkformer-bench-result";
inline constexpr std::int64_t kSchemaVersion = 1;

enum class Status { Ok, Skipped, Failed };
const char* to_string(Status s);

// Median, quartiles and extremes of the repetitions, in milliseconds.
struct Stats {
    double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
    bool operator==(const Stats&) const = default;
};
// Quartiles by linear interpolation between order statistics; needs at least one value.
Stats stats_of(std::vector<double> values);

// A case parameter: a shape dimension or a word (dtype, mode, model).
struct Param {
    std::string name;
    std::variant<std::int64_t, std::string> value;
    bool operator==(const Param&) const = default;
};

struct Result {
    std::string suite;  // "ceilings", "attention", "matmul", ...
    // Names the case the same way on every device: compare matches results on (suite, name).
    std::string name;
    Status status = Status::Ok;
    std::string message;  // why it was skipped or failed; empty when ok
    std::vector<Param> params;
    std::string plan;    // the tile configuration chosen on this device; empty: none
    std::string timing;  // "gpu_timestamps" or "host_wall_clock"
    std::vector<double> reps_ms;
    std::optional<Stats> stats;  // of reps_ms; absent unless ok
    // Work per repetition: arithmetic (an FMA counts 2) and the least memory traffic.
    std::uint64_t flops = 0;
    std::uint64_t bytes = 0;
    // From the median: GFLOP/s and GB/s, and their fractions of the device's measured
    // fp32 FMA rate and memory bandwidth (absent where no ceiling was measured).
    std::optional<double> gflops, gbps, fma_fraction, bandwidth_fraction;
    // The suite's own numbers (the naive attention's median ms, a ceiling's rate...).
    std::vector<std::pair<std::string, double>> extra;

    bool operator==(const Result&) const = default;
    const Param* param(std::string_view name) const;
    std::optional<double> extra_value(std::string_view name) const;
};

// The device's measured ceilings (absent: not measured or skipped).
struct Ceilings {
    std::optional<double> bandwidth_gbps;    // large device copy, bytes read plus written
    std::optional<double> fp32_gflops;       // fp32 FMA, 2 flops each
    std::optional<double> fp16_gflops;       // float16 FMA, 2 flops each
    std::optional<double> dispatches_per_s;  // empty dispatches in one submission
    std::optional<double> upload_gbps;       // host to device
    std::optional<double> download_gbps;     // device to host
    bool operator==(const Ceilings&) const = default;
};

struct Run {
    std::int64_t schema_version = kSchemaVersion;
    std::string vkformer_version;
    std::string git_commit;
    bool git_dirty = false;
    std::string created_utc;  // ISO 8601, "2026-11-22T08:30:00Z"
    std::string command_line;
    std::vector<std::string> suites;
    bool quick = false;
    std::uint32_t warmup = 0;
    std::uint32_t reps = 0;
    std::string limit_overrides;  // LimitOverrides::describe() of VKF_LIMITS and --limits
    // As vkf-info --json writes them (runtime/device_info_json.hpp), kept as JSON so that
    // files from newer drivers with more fields still read.
    nlohmann::ordered_json device;
    nlohmann::ordered_json effective_limits;
    nlohmann::ordered_json quirks;
    Ceilings ceilings;
    std::vector<Result> results;

    bool operator==(const Run&) const = default;
};

// Sets the fractions of `r` from its rates and the ceilings (none for the ceilings suite).
void place_against(Result& r, const Ceilings& c);

nlohmann::ordered_json run_json(const Run& run);
void write_run_file(const std::filesystem::path& path, const Run& run);
// Throws vkf::Error naming the file and key for anything that does not fit the schema,
// including a schema_version this build does not know.
Run read_run(const JsonValue& document);
Run read_run_file(const std::filesystem::path& path);

// Convenience readers for the device object: "" when absent.
std::string device_text(const Run& run, std::string_view key);

// Now, as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now_iso8601();

}  // namespace vkf::bench
