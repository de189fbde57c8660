#include "apps/bench/results.hpp"

#include "base/error.hpp"
#include "base/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

namespace vkf::bench {

const char* to_string(Status s) {
    switch (s) {
        case Status::Ok:
            return "ok";
        case Status::Skipped:
            return "skipped";
        case Status::Failed:
            return "failed";
    }
    return "?";
}

Stats stats_of(std::vector<double> values) {
    if (values.empty()) {
        throw Error("stats_of: no repetitions");
    }
    std::sort(values.begin(), values.end());
    const auto quantile = [&](double q) {
        const double position = q * static_cast<double>(values.size() - 1);
        const auto low = static_cast<std::size_t>(std::floor(position));
        const std::size_t high = std::min(low + 1, values.size() - 1);
        const double t = position - static_cast<double>(low);
        return values[low] + t * (values[high] - values[low]);
    };
    return Stats{.median = quantile(0.5),
                 .min = values.front(),
                 .max = values.back(),
                 .q1 = quantile(0.25),
                 .q3 = quantile(0.75)};
}

const Param* Result::param(std::string_view n) const {
    for (const Param& p : params) {
        if (p.name == n) {
            return &p;
        }
    }
    return nullptr;
}

std::optional<double> Result::extra_value(std::string_view n) const {
    for (const auto& [key, v] : extra) {
        if (key == n) {
            return v;
        }
    }
    return std::nullopt;
}

void place_against(Result& r, const Ceilings& c) {
    r.fma_fraction.reset();
    r.bandwidth_fraction.reset();
    if (r.suite == "ceilings") {  // the ceilings themselves (transfers are not device copies)
        return;
    }
    if (r.gflops && c.fp32_gflops && *c.fp32_gflops > 0.0) {
        r.fma_fraction = *r.gflops / *c.fp32_gflops;
    }
    if (r.gbps && c.bandwidth_gbps && *c.bandwidth_gbps > 0.0) {
        r.bandwidth_fraction = *r.gbps / *c.bandwidth_gbps;
    }
}

// --- writing ---------------------------------------------------------------------------

namespace {

using Json = nlohmann::ordered_json;

Json number_or_null(const std::optional<double>& v) {
    return v ? Json(*v) : Json(nullptr);
}

Json result_json(const Result& r) {
    Json params = Json::object();
    for (const Param& p : r.params) {
        std::visit([&](const auto& v) { params[p.name] = v; }, p.value);
    }
    Json extra = Json::object();
    for (const auto& [key, v] : r.extra) {
        extra[key] = v;
    }
    return {
        {"suite", r.suite},
        {"name", r.name},
        {"status", to_string(r.status)},
        {"message", r.message},
        {"params", params},
        {"plan", r.plan},
        {"timing", r.timing},
        {"reps_ms", r.reps_ms},
        {"stats_ms", r.stats ? Json{{"median", r.stats->median},
                                    {"min", r.stats->min},
                                    {"max", r.stats->max},
                                    {"q1", r.stats->q1},
                                    {"q3", r.stats->q3}}
                             : Json(nullptr)},
        {"flops", r.flops},
        {"bytes", r.bytes},
        {"gflops", number_or_null(r.gflops)},
        {"gbps", number_or_null(r.gbps)},
        {"fma_fraction", number_or_null(r.fma_fraction)},
        {"bandwidth_fraction", number_or_null(r.bandwidth_fraction)},
        {"extra", extra},
    };
}

}  // namespace

Json run_json(const Run& run) {
    Json results = Json::array();
    for (const Result& r : run.results) {
        results.push_back(result_json(r));
    }
    const Ceilings& c = run.ceilings;
    return {
        {"schema", kSchemaName},
        {"schema_version", run.schema_version},
        {"vkformer", {{"version", run.vkformer_version}, {"git_commit", run.git_commit}, {"git_dirty", run.git_dirty}}},
        {"created_utc", run.created_utc},
        {"command_line", run.command_line},
        {"settings",
         {{"suites", run.suites},
          {"quick", run.quick},
          {"warmup", run.warmup},
          {"reps", run.reps},
          {"limit_overrides", run.limit_overrides}}},
        {"device", run.device},
        {"effective_limits", run.effective_limits},
        {"quirks", run.quirks},
        {"ceilings",
         {{"bandwidth_gbps", number_or_null(c.bandwidth_gbps)},
          {"fp32_gflops", number_or_null(c.fp32_gflops)},
          {"fp16_gflops", number_or_null(c.fp16_gflops)},
          {"dispatches_per_s", number_or_null(c.dispatches_per_s)},
          {"upload_gbps", number_or_null(c.upload_gbps)},
          {"download_gbps", number_or_null(c.download_gbps)}}},
        {"results", results},
    };
}

void write_run_file(const std::filesystem::path& path, const Run& run) {
    write_file_atomically(path, json_text(run_json(run)) + "\n", "result file");
}

// --- reading ---------------------------------------------------------------------------

namespace {

std::optional<double> optional_number(const JsonValue& object, std::string_view key) {
    const JsonValue& v = object.at(key);
    if (v.is_null()) {
        return std::nullopt;
    }
    return v.as_double();
}

std::vector<double> doubles(const JsonValue& v) {
    std::vector<double> out;
    for (const JsonValue& e : v.as_array()) {
        out.push_back(e.as_double());
    }
    return out;
}

Status status_of(const JsonValue& v) {
    const std::string& s = v.as_string();
    if (s == "ok") {
        return Status::Ok;
    }
    if (s == "skipped") {
        return Status::Skipped;
    }
    if (s == "failed") {
        return Status::Failed;
    }
    v.fail("expected \"ok\", \"skipped\" or \"failed\", got \"" + s + "\"");
}

Result read_result(const JsonValue& v) {
    Result r;
    r.suite = v.at("suite").as_string();
    r.name = v.at("name").as_string();
    r.status = status_of(v.at("status"));
    r.message = v.at("message").as_string();
    for (const JsonMember& m : v.at("params").as_object()) {
        if (m.value.is_string()) {
            r.params.push_back(Param{m.key, m.value.as_string()});
        } else {
            r.params.push_back(Param{m.key, m.value.as_int64()});
        }
    }
    r.plan = v.at("plan").as_string();
    r.timing = v.at("timing").as_string();
    r.reps_ms = doubles(v.at("reps_ms"));
    if (const JsonValue& s = v.at("stats_ms"); !s.is_null()) {
        r.stats = Stats{.median = s.at("median").as_double(),
                        .min = s.at("min").as_double(),
                        .max = s.at("max").as_double(),
                        .q1 = s.at("q1").as_double(),
                        .q3 = s.at("q3").as_double()};
    }
    r.flops = v.at("flops").as_uint64();
    r.bytes = v.at("bytes").as_uint64();
    r.gflops = optional_number(v, "gflops");
    r.gbps = optional_number(v, "gbps");
    r.fma_fraction = optional_number(v, "fma_fraction");
    r.bandwidth_fraction = optional_number(v, "bandwidth_fraction");
    for (const JsonMember& m : v.at("extra").as_object()) {
        r.extra.emplace_back(m.key, m.value.as_double());
    }
    return r;
}

}  // namespace

Run read_run(const JsonValue& d) {
    if (d.at("schema").as_string() != kSchemaName) {
        d.at("schema").fail(std::string("not a vkf-bench result file (expected \"") + kSchemaName + "\")");
    }
    Run run;
    run.schema_version = d.at("schema_version").as_int64();
    if (run.schema_version != kSchemaVersion) {
        d.at("schema_version")
            .fail(
                fmt::format("schema version {}, this vkf-bench reads version {}", run.schema_version, kSchemaVersion));
    }
    const JsonValue& version = d.at("vkformer");
    run.vkformer_version = version.at("version").as_string();
    run.git_commit = version.at("git_commit").as_string();
    run.git_dirty = version.at("git_dirty").as_bool();
    run.created_utc = d.at("created_utc").as_string();
    run.command_line = d.at("command_line").as_string();
    const JsonValue& settings = d.at("settings");
    for (const JsonValue& s : settings.at("suites").as_array()) {
        run.suites.push_back(s.as_string());
    }
    run.quick = settings.at("quick").as_bool();
    run.warmup = settings.at("warmup").as_integer<std::uint32_t>();
    run.reps = settings.at("reps").as_integer<std::uint32_t>();
    run.limit_overrides = settings.at("limit_overrides").as_string();
    if (!d.at("device").is_object()) {
        d.at("device").fail("expected an object");
    }
    run.device = to_nlohmann(d.at("device"));
    run.effective_limits = to_nlohmann(d.at("effective_limits"));
    run.quirks = to_nlohmann(d.at("quirks"));
    const JsonValue& c = d.at("ceilings");
    run.ceilings = Ceilings{.bandwidth_gbps = optional_number(c, "bandwidth_gbps"),
                            .fp32_gflops = optional_number(c, "fp32_gflops"),
                            .fp16_gflops = optional_number(c, "fp16_gflops"),
                            .dispatches_per_s = optional_number(c, "dispatches_per_s"),
                            .upload_gbps = optional_number(c, "upload_gbps"),
                            .download_gbps = optional_number(c, "download_gbps")};
    for (const JsonValue& r : d.at("results").as_array()) {
        run.results.push_back(read_result(r));
    }
    return run;
}

Run read_run_file(const std::filesystem::path& path) {
    return read_run(read_json_file(path));
}

std::string device_text(const Run& run, std::string_view key) {
    const auto v = run.device.is_object() ? run.device.find(key) : run.device.end();
    if (v == run.device.end()) {
        return "";
    }
    if (v->is_string()) {
        return v->get<std::string>();
    }
    if (v->is_number()) {
        return fmt::format("{}", v->get<double>());
    }
    return "";
}

std::string utc_now_iso8601() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

}  // namespace vkf::bench
