#include "apps/bench/bench_results.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

namespace vkf::bench {

const char* to_string(Status s) {
    switch (s) {
    case Status::Ok: return "ok";
    case Status::Skipped: return "skipped";
    case Status::Failed: return "failed";
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
    if (r.suite == "ceilings") { // the ceilings themselves (transfers are not device copies)
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

void optional_field(JsonWriter& json, std::string_view name, const std::optional<double>& v) {
    json.key(name);
    v ? json.value(*v) : json.null();
}

void write_doubles(JsonWriter& json, std::string_view name, const std::vector<double>& values) {
    json.key(name).begin_array();
    for (const double v : values) {
        json.value(v);
    }
    json.end_array();
}

void write_result(JsonWriter& json, const Result& r) {
    json.begin_object()
        .field("suite", r.suite)
        .field("name", r.name)
        .field("status", to_string(r.status))
        .field("message", r.message)
        .key("params")
        .begin_object();
    for (const Param& p : r.params) {
        json.key(p.name);
        std::visit([&](const auto& v) { json.value(v); }, p.value);
    }
    json.end_object().field("plan", r.plan).field("timing", r.timing);
    write_doubles(json, "reps_ms", r.reps_ms);
    json.key("stats_ms");
    if (r.stats) {
        json.begin_object()
            .field("median", r.stats->median)
            .field("min", r.stats->min)
            .field("max", r.stats->max)
            .field("q1", r.stats->q1)
            .field("q3", r.stats->q3)
            .end_object();
    } else {
        json.null();
    }
    json.field("flops", r.flops).field("bytes", r.bytes);
    optional_field(json, "gflops", r.gflops);
    optional_field(json, "gbps", r.gbps);
    optional_field(json, "fma_fraction", r.fma_fraction);
    optional_field(json, "bandwidth_fraction", r.bandwidth_fraction);
    json.key("extra").begin_object();
    for (const auto& [key, v] : r.extra) {
        json.field(key, v);
    }
    json.end_object().end_object();
}

void write_ceilings(JsonWriter& json, const Ceilings& c) {
    json.begin_object();
    optional_field(json, "bandwidth_gbps", c.bandwidth_gbps);
    optional_field(json, "fp32_gflops", c.fp32_gflops);
    optional_field(json, "fp16_gflops", c.fp16_gflops);
    optional_field(json, "dispatches_per_s", c.dispatches_per_s);
    optional_field(json, "upload_gbps", c.upload_gbps);
    optional_field(json, "download_gbps", c.download_gbps);
    json.end_object();
}

} // namespace

void write_json_value(JsonWriter& json, const JsonValue& v) {
    switch (v.kind()) {
    case JsonKind::Null: json.null(); break;
    case JsonKind::Bool: json.value(v.as_bool()); break;
    case JsonKind::Number: {
        // Integers exactly (a 64-bit size must not pass through a double), others as doubles.
        try {
            json.value(v.as_int64());
        } catch (const Error&) {
            try {
                json.value(v.as_uint64());
            } catch (const Error&) {
                json.value(v.as_double());
            }
        }
        break;
    }
    case JsonKind::String: json.value(v.as_string()); break;
    case JsonKind::Array:
        json.begin_array();
        for (const JsonValue& e : v.as_array()) {
            write_json_value(json, e);
        }
        json.end_array();
        break;
    case JsonKind::Object:
        json.begin_object();
        for (const JsonMember& m : v.as_object()) {
            json.key(m.key);
            write_json_value(json, m.value);
        }
        json.end_object();
        break;
    }
}

bool json_equal(const JsonValue& a, const JsonValue& b) {
    if (a.kind() != b.kind()) {
        return false;
    }
    switch (a.kind()) {
    case JsonKind::Null: return true;
    case JsonKind::Bool: return a.as_bool() == b.as_bool();
    case JsonKind::Number: return a.as_double() == b.as_double();
    case JsonKind::String: return a.as_string() == b.as_string();
    case JsonKind::Array:
        return std::equal(a.as_array().begin(), a.as_array().end(), b.as_array().begin(), b.as_array().end(),
                          json_equal);
    case JsonKind::Object:
        return std::equal(a.as_object().begin(), a.as_object().end(), b.as_object().begin(), b.as_object().end(),
                          [](const JsonMember& x, const JsonMember& y) {
                              return x.key == y.key && json_equal(x.value, y.value);
                          });
    }
    return false;
}

bool operator==(const Run& a, const Run& b) {
    return a.schema_version == b.schema_version && a.vkformer_version == b.vkformer_version &&
           a.git_commit == b.git_commit && a.git_dirty == b.git_dirty && a.created_utc == b.created_utc &&
           a.command_line == b.command_line && a.suites == b.suites && a.quick == b.quick &&
           a.warmup == b.warmup && a.reps == b.reps && a.limit_overrides == b.limit_overrides &&
           json_equal(a.device, b.device) && json_equal(a.effective_limits, b.effective_limits) &&
           json_equal(a.quirks, b.quirks) && a.ceilings == b.ceilings && a.results == b.results;
}

void write_run(JsonWriter& json, const Run& run) {
    json.begin_object()
        .field("schema", kSchemaName)
        .field("schema_version", run.schema_version)
        .key("vkformer")
        .begin_object()
        .field("version", run.vkformer_version)
        .field("git_commit", run.git_commit)
        .field("git_dirty", run.git_dirty)
        .end_object()
        .field("created_utc", run.created_utc)
        .field("command_line", run.command_line)
        .key("settings")
        .begin_object()
        .key("suites")
        .begin_array();
    for (const std::string& s : run.suites) {
        json.value(s);
    }
    json.end_array()
        .field("quick", run.quick)
        .field("warmup", run.warmup)
        .field("reps", run.reps)
        .field("limit_overrides", run.limit_overrides)
        .end_object();
    json.key("device");
    write_json_value(json, run.device);
    json.key("effective_limits");
    write_json_value(json, run.effective_limits);
    json.key("quirks");
    write_json_value(json, run.quirks);
    json.key("ceilings");
    write_ceilings(json, run.ceilings);
    json.key("results").begin_array();
    for (const Result& r : run.results) {
        write_result(json, r);
    }
    json.end_array().end_object();
    json.finish();
}

void write_run_file(const std::filesystem::path& path, const Run& run) {
    // Written next to the target and renamed: an interrupted write never leaves half a file.
    const std::filesystem::path temporary = path.string() + ".partial";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out) {
            throw Error("cannot write the result file '" + temporary.string() + "'");
        }
        JsonWriter json(out);
        write_run(json, run);
        out << '\n';
        out.flush();
        if (!out) {
            throw Error("writing the result file '" + temporary.string() + "' failed");
        }
    }
    std::error_code ec;
    std::filesystem::rename(temporary, path, ec);
    if (ec) {
        throw Error("cannot rename '" + temporary.string() + "' to '" + path.string() + "': " + ec.message());
    }
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

} // namespace

Run read_run(const JsonValue& d) {
    if (d.at("schema").as_string() != kSchemaName) {
        d.at("schema").fail(std::string("not a vkf-bench result file (expected \"") + kSchemaName + "\")");
    }
    Run run;
    run.schema_version = d.at("schema_version").as_int64();
    if (run.schema_version != kSchemaVersion) {
        d.at("schema_version")
            .fail("schema version " + std::to_string(run.schema_version) + ", this vkf-bench reads version " +
                  std::to_string(kSchemaVersion));
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
    run.device = d.at("device");
    if (!run.device.is_object()) {
        run.device.fail("expected an object");
    }
    run.effective_limits = d.at("effective_limits");
    run.quirks = d.at("quirks");
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

Run read_run_file(const std::filesystem::path& path) { return read_run(read_json_file(path)); }

std::string device_text(const Run& run, std::string_view key) {
    if (!run.device.is_object()) {
        return "";
    }
    const JsonValue* v = run.device.find(key);
    if (v == nullptr) {
        return "";
    }
    if (v->is_string()) {
        return v->as_string();
    }
    if (v->is_number()) {
        std::ostringstream s;
        s << v->as_double();
        return s.str();
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

} // namespace vkf::bench
