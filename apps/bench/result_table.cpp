#include "apps/bench/result_table.hpp"

#include "base/format.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace vkf::bench {

namespace {

std::string limits_text(const ComputeLimits& l) {
    std::string text =
        fmt::format("shared memory {}, {} invocations, storage buffer range {}, subgroup {}, fp16 arithmetic {}",
                    size_with_bytes(l.shared_memory), l.workgroup_invocations, size_text(l.storage_buffer_range),
                    l.subgroup_size, l.fp16_arithmetic ? "yes" : "no");
    if (l.max_loop_iterations != 0) {
        text += fmt::format(", at most {} loop iterations (driver quirk)", l.max_loop_iterations);
    }
    if (!l.loop_unrolling) {
        // Figures from two drivers compare kernels compiled differently: say so.
        text += ", loop unrolling off";
    }
    return text;
}

std::string optional_number(const std::optional<double>& v) {
    return v ? significant(*v) : "-";
}

std::string optional_percent(const std::optional<double>& v) {
    return v ? fixed(100.0 * *v, 1) : "-";
}

}  // namespace

ResultTable::ResultTable(std::size_t name_width) : name_width_(std::max<std::size_t>(name_width, 4)) {}

void ResultTable::print_header(const Context& ctx, const Run& run, std::size_t case_count) const {
    const DeviceInfo& info = ctx.device_info();
    fmt::print("vkf-bench (vkformer {}, commit {}{})\n", run.vkformer_version, run.git_commit.substr(0, 12),
               run.git_dirty ? "+changes" : "");
    fmt::print("device:  {} ({}, vendor {})\n", info.name, to_string(info.type), info.vendor_name);
    fmt::print("driver:  {}{} ({}), Vulkan {}\n", info.driver_name.empty() ? "not reported" : info.driver_name,
               info.driver_info.empty() ? "" : ", " + info.driver_info, info.driver_version_text,
               format_version(info.api_version));
    fmt::print("limits:  {}\n", limits_text(ctx.limits()));
    fmt::print("forced:  {}\n", run.limit_overrides);
    fmt::print("timing:  {}, median of {} after {} warmup; {}\n\n",
               ctx.limits().timestamps ? "GPU timestamps" : "host wall clock", run.reps, run.warmup,
               count_text(case_count, "case"));
    fmt::print("{:<9}  {:<{}}  {:>10}  {:>21}  {:>9}  {:>8}  {:>6}  {:>6}  plan / note\n", "suite", "case", name_width_,
               "median ms", "min..max ms", "GFLOP/s", "GB/s", "%FMA", "%BW");
    std::fflush(stdout);
}

std::string result_note(const Result& r) {
    std::string note = r.plan;
    if (const auto d = r.extra_value("dispatches_per_s")) {
        note = fmt::format("{} dispatches/s; {}", significant(*d), note);
    }
    if (const auto s = r.extra_value("speedup")) {
        note = fmt::format("tiled is {}x faster; {}", fixed(*s, 2), note);
    }
    if (const auto b = r.extra_value("batch"); b && r.extra_value("per_sequence_tokens_per_second")) {
        note = fmt::format("{} tokens/s ({} per sequence), {} of {} KV blocks; {}",
                           significant(*r.extra_value("tokens_per_second")),
                           significant(*r.extra_value("per_sequence_tokens_per_second")),
                           *r.extra_value("kv_blocks_used"), *r.extra_value("kv_blocks_total"), note);
    }
    return note;
}

void ResultTable::print_row(const Result& r) const {
    if (r.status != Status::Ok || !r.stats) {
        fmt::print("{:<9}  {:<{}}  {:>10}  {}\n", r.suite, r.name, name_width_, to_string(r.status), r.message);
    } else {
        fmt::print("{:<9}  {:<{}}  {:>10}  {:>21}  {:>9}  {:>8}  {:>6}  {:>6}  {}\n", r.suite, r.name, name_width_,
                   significant(r.stats->median), significant(r.stats->min) + ".." + significant(r.stats->max),
                   optional_number(r.gflops), optional_number(r.gbps), optional_percent(r.fma_fraction),
                   optional_percent(r.bandwidth_fraction), result_note(r));
    }
    std::fflush(stdout);  // the next row may be many minutes away
}

void print_summary(const Run& run, bool suggest_out) {
    const auto count = [&](Status s) {
        return std::count_if(run.results.begin(), run.results.end(), [&](const Result& r) { return r.status == s; });
    };
    fmt::print(
        "\n{} ok, {} skipped, {} failed. %FMA: GFLOP/s of the measured fp32 FMA rate; %BW: GB/s (least "
        "traffic) of the measured copy bandwidth.\n",
        count(Status::Ok), count(Status::Skipped), count(Status::Failed));
    if (suggest_out) {
        fmt::print("(--out FILE writes a result file for vkf-bench compare)\n");
    }
}

}  // namespace vkf::bench
