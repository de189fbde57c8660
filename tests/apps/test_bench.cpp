// vkf-bench's library: result-file schema round trips, statistics, the comparison table,
// SVG plots, the programs' shared option parsing, and the ceilings suite on the device
// (including a skipped fp16 ceiling under forced limits).

#include "apps/bench/comparison.hpp"
#include "apps/bench/llama_rows.hpp"
#include "apps/bench/report.hpp"
#include "apps/bench/results.hpp"
#include "apps/bench/suites.hpp"
#include "apps/bench/svg_plot.hpp"
#include "apps/common/options.hpp"
#include "tests/support/vulkan_test.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

namespace vkf::bench {
namespace {

using BenchRun = vkf::bench::Run;  // a plain Run inside a TEST is testing::Test::Run

Result sample_result(std::string suite, std::string name, double ms, std::uint64_t flops) {
    Result r{.suite = std::move(suite), .name = std::move(name), .timing = "gpu_timestamps"};
    r.params = {{"model", "bloom-560m"},
                {"q_len", std::int64_t{256}},
                {"kv_len", std::int64_t{256}},
                {"mode", "prefill"},
                {"dtype", "f16"},
                {"impl", "tiled"}};
    r.plan = "tiles 32x32, 256 invocations";
    r.reps_ms = {ms * 1.1, ms, ms * 0.97, ms * 1.5, ms * 1.05};
    r.stats = stats_of(r.reps_ms);
    r.flops = flops;
    r.bytes = 12345678901234ull;  // over 2^32: exact integers must survive
    r.gflops = static_cast<double>(flops) / (r.stats->median * 1e-3) * 1e-9;
    r.gbps = 0.1;
    r.fma_fraction = 1.0 / 3.0;
    r.extra = {{"memory_bytes", 4194304.0}, {"tiny", 1e-300}};
    return r;
}

BenchRun sample_run() {
    BenchRun run;
    run.vkformer_version = "0.1.0";
    run.git_commit = "0123456789abcdef0123456789abcdef01234567";
    run.git_dirty = true;
    run.created_utc = "2026-11-22T08:30:00Z";
    run.command_line = "vkf-bench --quick --limits 'a b'";
    run.suites = {"ceilings", "attention", "matmul"};
    run.quick = true;
    run.warmup = 1;
    run.reps = 3;
    run.limit_overrides = "none";
    run.device =
        nlohmann::ordered_json::parse(R"({"name": "GPU \"X\" \u00e9", "vendor_name": "Mesa", "api_version": "1.3.230",
        "max_memory_allocation_size": 18446744073709551615, "heaps": [{"size": 8589934592, "device_local": true}],
        "timestamp_period_ns": 0.52, "compute_queue_family": null})");
    run.effective_limits =
        nlohmann::ordered_json::parse(R"({"shared_memory": 16384, "forced": true, "workgroup_count": [65535, 1, 1]})");
    run.quirks = nlohmann::ordered_json::parse(R"({"reasons": []})");
    run.ceilings = Ceilings{.bandwidth_gbps = 12.5, .fp32_gflops = 1234.5678, .dispatches_per_s = 61000.0};
    run.results.push_back(sample_result("attention", "bloom-560m prefill f16 tiled q=256 kv=256", 3.25, 4ull << 30));
    Result skipped{.suite = "ceilings",
                   .name = "fp16 fma",
                   .status = Status::Skipped,
                   .message = "the device has no float16 arithmetic (shaderFloat16)",
                   .timing = "gpu_timestamps"};
    skipped.params = {{"ceiling", "fp16 fma"}};
    run.results.push_back(skipped);
    return run;
}

BenchRun round_trip(const BenchRun& run) {
    return read_run(parse_json(json_text(run_json(run)), "round trip"));
}

TEST(BenchResults, StatsUseInterpolatedQuartiles) {
    const Stats odd = stats_of({5, 1, 3, 2, 4});
    EXPECT_EQ(odd, (Stats{.median = 3, .min = 1, .max = 5, .q1 = 2, .q3 = 4}));
    const Stats even = stats_of({4, 1, 3, 2});
    EXPECT_DOUBLE_EQ(even.median, 2.5);
    EXPECT_DOUBLE_EQ(even.q1, 1.75);
    EXPECT_DOUBLE_EQ(even.q3, 3.25);
    EXPECT_EQ(stats_of({7}).median, 7);
    EXPECT_THROW(stats_of({}), Error);
}

TEST(BenchResults, RunRoundTripsThroughJson) {
    const BenchRun run = sample_run();
    const BenchRun back = round_trip(run);
    EXPECT_TRUE(back == run);
    EXPECT_EQ(back.results.at(0).bytes, 12345678901234ull);
    EXPECT_EQ(back.results.at(1).status, Status::Skipped);
    EXPECT_EQ(device_text(back, "name"), "GPU \"X\" \u00e9");
    // And a second trip changes nothing either.
    EXPECT_TRUE(round_trip(back) == run);
}

TEST(BenchResults, RunRoundTripsThroughAFile) {
    const std::filesystem::path path = std::filesystem::temp_directory_path() / "vkf_test_bench_result.json";
    const BenchRun run = sample_run();
    write_run_file(path, run);
    EXPECT_TRUE(read_run_file(path) == run);
    std::filesystem::remove(path);
}

// On a full disk the result file is an error and the previous file stays as it was (the
// stream used to be checked before it was flushed, never at close).
TEST(BenchResults, AFullDiskKeepsThePreviousResultFile) {
    const vkf::test::TempDir dir("vkf_test_bench_full");
    const std::filesystem::path path = dir.path() / "result.json";
    write_run_file(path, sample_run());
    const auto before = std::filesystem::file_size(path);
    BenchRun bigger = sample_run();
    bigger.results.insert(bigger.results.end(), 50, bigger.results.front());
    const std::string e = vkf::test::full_disk_error(before, [&] { write_run_file(path, bigger); });
    EXPECT_NE(e.find("result file '" + path.string() + "': write failed"), std::string::npos) << e;
    EXPECT_TRUE(read_run_file(path) == sample_run());
    EXPECT_EQ(vkf::test::directory_listing(dir.path()), std::vector<std::string>{"result.json"});
}

TEST(BenchResults, ReaderNamesWhatIsWrong) {
    const std::string doc = json_text(run_json(sample_run()));
    const auto replace = [](std::string s, const std::string& from, const std::string& to) {
        s.replace(s.find(from), from.size(), to);
        return s;
    };
    try {
        read_run(parse_json(replace(doc, "\"schema_version\": 1", "\"schema_version\": 99"), "x.json"));
        FAIL() << "a future schema version was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
    }
    try {
        read_run(parse_json(replace(doc, "\"status\": \"skipped\"", "\"status\": \"maybe\""), "x.json"));
        FAIL() << "an unknown status was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("results[1].status"), std::string::npos) << e.what();
    }
    EXPECT_THROW(read_run(parse_json(R"({"schema": "something else"})", "x.json")), Error);
}

TEST(BenchResults, FractionsOfTheCeilings) {
    Result r = sample_result("matmul", "m", 1.0, 2'000'000'000);
    r.gflops = 617.25;
    r.gbps = 5.0;
    place_against(r, Ceilings{.bandwidth_gbps = 10.0, .fp32_gflops = 1234.5});
    EXPECT_DOUBLE_EQ(*r.fma_fraction, 0.5);
    EXPECT_DOUBLE_EQ(*r.bandwidth_fraction, 0.5);
    place_against(r, Ceilings{});
    EXPECT_FALSE(r.fma_fraction.has_value());
}

// Two runs where the second is twice as fast on one case and lacks another.
std::vector<BenchRun> two_runs() {
    BenchRun a = sample_run();
    BenchRun b = sample_run();
    a.results.push_back(sample_result("matmul", "bloom-560m qkv m=1 & more", 2.0, 1000000));
    b.results.push_back(sample_result("matmul", "bloom-560m qkv m=1 & more", 1.0, 1000000));
    a.results.push_back(sample_result("attention", "bloom-560m decode f16 tiled q=1 kv=1024", 1.0, 1000));
    b.results.at(0).plan = "tiles 16x32, 128 invocations";
    return {a, b};
}

TEST(BenchReport, ComparisonTableShowsRatiosSkipsAndGaps) {
    const std::vector<BenchRun> runs = two_runs();
    const std::vector<std::string> labels = {"big", "phone"};
    std::ostringstream out;
    print_comparison(out, runs, labels);
    const std::string table = out.str();
    EXPECT_NE(table.find("[2] phone"), std::string::npos) << table;
    EXPECT_NE(table.find("2.00x"), std::string::npos) << table;   // twice as fast
    EXPECT_NE(table.find("1.00x*"), std::string::npos) << table;  // same speed, another plan
    EXPECT_NE(table.find("skipped"), std::string::npos) << table;
    EXPECT_NE(table.find("kv=1024"), std::string::npos) << table;  // in one file only
}

bool well_formed_svg(const std::string& svg) {
    return svg.find("<svg") != std::string::npos && svg.rfind("</svg>") != std::string::npos &&
           svg.rfind("</svg>") > svg.find("<svg") && svg.find(" & ") == std::string::npos;
}

TEST(BenchReport, SvgPlotsForLinesAndBars) {
    const std::vector<BenchRun> runs = two_runs();
    const std::vector<std::string> labels = {"big <1>", "phone"};
    const std::string lines = svg_plot(*find_suite("attention"), runs, labels);
    EXPECT_TRUE(well_formed_svg(lines)) << lines;
    EXPECT_NE(lines.find("<polyline"), std::string::npos);
    EXPECT_NE(lines.find("big &lt;1&gt;"), std::string::npos);  // escaped
    const std::string bars = svg_plot(*find_suite("matmul"), runs, labels);
    EXPECT_TRUE(well_formed_svg(bars)) << bars;
    EXPECT_NE(bars.find("<rect x="), std::string::npos);
    EXPECT_NE(bars.find("&amp; more"), std::string::npos);
    const std::string empty = svg_plot(*find_suite("ceilings"), std::vector<BenchRun>{BenchRun{}}, labels);
    EXPECT_TRUE(well_formed_svg(empty));
    EXPECT_NE(empty.find("no results"), std::string::npos);

    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "vkf_test_bench_plots";
    std::filesystem::remove_all(dir);
    const auto written = write_plots(dir, runs, labels);
    EXPECT_EQ(written.size(), 3u);  // ceilings, attention, matmul
    for (const auto& path : written) {
        EXPECT_GT(std::filesystem::file_size(path), 200u) << path;
    }
    std::filesystem::remove_all(dir);
}

// The options every program declares (apps/common/options.hpp) on a CLI11 command line.
struct TestOptions {
    std::optional<std::uint32_t> reps;
    std::optional<std::vector<std::uint32_t>> lengths;
    bool json = false;
    LimitOverrides limits;
};

TestOptions parse_test_options(std::vector<const char*> args) {
    app::CommandLine cli("test", "");
    TestOptions o;
    app::add_integer(cli, "--reps", "N", o.reps, 1u, "");
    app::add_counts(cli, "--lengths", "N,...", o.lengths, "");
    cli.add_flag("--json", o.json, "");
    app::add_limits(cli, o.limits);
    args.insert(args.begin(), "test");
    cli.parse(static_cast<int>(args.size()), args.data());
    return o;
}

// llama-bench's statistics, on a row it wrote itself (tests/apps/data/llama_bench/
// kjv-bloom-cpu.json, pp64: samples_ns 3539699 and 46769416, avg_ts 9724.524521, stddev_ts
// 11817.322519), and its test names.
TEST(LlamaRows, StatisticsAndNamesAreLlamaBenchs) {
    LlamaRow row;
    row.test = {.n_prompt = 64};
    row.samples_ns = {3539699, 46769416};
    EXPECT_NEAR(row.avg_ts(), 9724.524521, 1e-5);
    EXPECT_NEAR(row.stddev_ts(), 11817.322519, 1e-5);
    const nlohmann::ordered_json j = row_json(row);
    EXPECT_EQ(j.at("avg_ns").get<std::uint64_t>(), 25154557u);  // llama-bench: 25154557
    EXPECT_EQ(j.at("stddev_ns").get<std::uint64_t>(), 30568026u);
    EXPECT_EQ(test_label({.n_prompt = 512}), "pp512");
    EXPECT_EQ(test_label({.n_gen = 128, .n_depth = 4096}), "tg128 @ d4096");
    EXPECT_EQ(test_label({.n_prompt = 512, .n_gen = 128, .sequences = 4}), "pp512+tg128 x4");
    // Four sequences of 128 tokens in one second: 512 t/s in all.
    row.test = {.n_gen = 128, .sequences = 4};
    row.samples_ns = {1000000000};
    EXPECT_DOUBLE_EQ(row.avg_ts(), 512.0);
}

TEST(LlamaRows, FieldsInLlamaBenchsOrderThenVkformers) {
    LlamaRow row;
    row.test = {.n_gen = 16};
    row.samples_ns = {1000000, 2000000};
    row.check_max_rel = std::numeric_limits<double>::infinity();  // a NaN logit: null in JSON
    row.failed = true;
    const nlohmann::ordered_json j = row_json(row);
    std::vector<std::string> keys;
    for (const auto& [key, value] : j.items()) {
        keys.push_back(key);
    }
    const std::vector<std::string>& fields = llama_bench_fields();
    ASSERT_GT(keys.size(), fields.size() + 2);
    EXPECT_EQ(std::vector<std::string>(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(fields.size())),
              fields);
    EXPECT_EQ(keys[fields.size()], "samples_ns");
    EXPECT_EQ(keys[fields.size() + 1], "samples_ts");
    for (std::size_t i = fields.size() + 2; i < keys.size(); ++i) {
        EXPECT_TRUE(keys[i].starts_with("vkf_")) << keys[i];
    }
    EXPECT_TRUE(j.at("vkf_check_max_rel").is_null());
    EXPECT_EQ(j.at("vkf_status"), "failed");
    const std::string md = llama_output({row}, LlamaFormat::Md);
    EXPECT_NE(md.find("FAILED check"), std::string::npos) << md;
    const std::string csv = llama_output({row, row}, LlamaFormat::Csv);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
    EXPECT_TRUE(csv.starts_with("build_commit,build_number,")) << csv.substr(0, 80);
}

// Result files come from anywhere: a name in one is text on the page, never markup.
TEST(BenchReport, PageEscapesWhatTheFilesSay) {
    nlohmann::ordered_json row =
        row_json(LlamaRow{.model_type = "<script>alert(1)</script>", .test = {.n_gen = 4}, .samples_ns = {1000000}});
    row["vkf_message"] = "\"><img src=x onerror=alert(2)>";
    const ReportInput input{.label = "a&b", .llama_rows = {row}};
    const std::string html = report_html(std::span(&input, 1), "<title>");
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("<img"), std::string::npos);
    EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
    EXPECT_NE(html.find("a&amp;b"), std::string::npos);
    EXPECT_NE(html.find(R"(data-field="avg_ts" data-value="4000")"), std::string::npos) << html;
}

TEST(Cli, ReadsValuesFlagsAndLists) {
    const TestOptions o = parse_test_options(
        {"--reps=3", "--lengths", "64,128", "--json", "--limits", "phone", "--limits", "no_fp16_arithmetic"});
    EXPECT_EQ(o.reps, 3u);
    EXPECT_EQ(o.lengths, (std::vector<std::uint32_t>{64, 128}));
    EXPECT_TRUE(o.json);
    EXPECT_TRUE(o.limits.shared_memory.has_value());  // from phone, merged with the second --limits
    EXPECT_TRUE(o.limits.no_fp16_arithmetic);
    EXPECT_EQ(parse_test_options({"--reps", "3", "--reps", "4"}).reps, 4u);  // the last wins

    EXPECT_THROW(parse_test_options({"x"}), CLI::ParseError);         // no positional arguments
    EXPECT_THROW(parse_test_options({"--json=1"}), CLI::ParseError);  // a flag takes no value
    EXPECT_THROW(parse_test_options({"--reps"}), CLI::ParseError);    // no value left
    EXPECT_THROW(parse_test_options({"--reps", "0"}), app::UsageError);
    EXPECT_THROW(parse_test_options({"--lengths", "64,"}), app::UsageError);
    EXPECT_THROW(parse_test_options({"--limits", "shared_memory=lots"}), app::UsageError);
    EXPECT_THROW(app::parse_choice("--dtype", "f64", {"f32", "f16"}), app::UsageError);
    EXPECT_EQ(app::parse_positive("--x", "2.5"), 2.5);
    EXPECT_THROW(app::parse_positive("--x", "-1"), app::UsageError);
    EXPECT_EQ(app::parse_size("--max-memory", "256M"), std::uint64_t{256} << 20);
    try {
        parse_test_options({"--reps", "x"});
        FAIL() << "--reps x was read";
    } catch (const app::UsageError& e) {
        EXPECT_STREQ(e.what(), "--reps needs a whole number >= 1, not 'x'");
    }
}

// The ceilings suite on the device, with fp16 arithmetic forced off: the fp16 ceiling is
// skipped with a reason, the others measured (small, --quick sizes).
TEST(BenchCeilings, MeasuresAndSkipsFp16WhenForcedOff) {
    test::MessageSink sink;
    Context ctx(test::test_options(sink, LimitOverrides::parse("no_fp16_arithmetic,storage_buffer_range=8M")));
    const SuiteSettings settings{.quick = true, .warmup = 0, .reps = 2};
    Ceilings ceilings;
    CaseEnv env{ctx, settings, ceilings};
    std::size_t skipped = 0;
    for (const BenchCase& c : ceiling_cases(ctx, settings)) {
        Result r{.suite = "ceilings", .name = c.name};
        try {
            c.run(env, r);
        } catch (const Skip& s) {
            EXPECT_EQ(c.name, "fp16 fma");
            EXPECT_NE(s.reason.find("float16"), std::string::npos) << s.reason;
            ++skipped;
            continue;
        }
        EXPECT_EQ(r.reps_ms.size(), 2u) << c.name;
        EXPECT_FALSE(r.plan.empty()) << c.name;
    }
    EXPECT_EQ(skipped, 1u);
    ASSERT_TRUE(ceilings.bandwidth_gbps && ceilings.fp32_gflops && ceilings.dispatches_per_s && ceilings.upload_gbps &&
                ceilings.download_gbps);
    EXPECT_GT(*ceilings.bandwidth_gbps, 0.0);
    EXPECT_GT(*ceilings.fp32_gflops, 0.0);
    EXPECT_FALSE(ceilings.fp16_gflops.has_value());
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::bench
