// `vkf-bench llama` (commands.hpp): llama-bench's tests (pp, tg, pg at depths, repetitions)
// on a checkpoint, written as llama-bench writes them (-o json, jsonl, csv, md), each row with
// vkformer's correctness check against the float64 reference; --sustained runs repetitions
// back to back and shows each one's tokens/s as it comes, so that throttling shows as a curve.

#include "apps/bench/commands.hpp"
#include "apps/bench/llama_measure.hpp"
#include "apps/bench/llama_rows.hpp"
#include "apps/bench/suites.hpp"
#include "apps/common/options.hpp"
#include "base/files.hpp"
#include "runtime/device_info_json.hpp"
#include "vkf_version.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

namespace vkf::bench {

namespace {

constexpr const char* kAbout =
    "llama-bench's tests on a checkpoint, in llama-bench's output forms, so that the two tools'\n"
    "rows merge into one table: pp (a prompt of -p tokens), tg (-n generated tokens one at a\n"
    "time) and pg (--pg PP,TG: both), each after -d tokens already in the cache, -r times;\n"
    "t/s is tokens over the host's wall clock, as llama-bench counts it. Every row carries\n"
    "vkformer's own fields too (vkf_...: driver, effective limits, the fraction of the measured\n"
    "bandwidth a tg row reaches, the sequences decoding together) and a correctness figure:\n"
    "the largest relative logit error against the float64 CPU reference over --check-tokens\n"
    "tokens (prompt and decoding steps), and with --sequences B > 1 the batched logits\n"
    "against the same sequences run alone. A row whose check is above --check-tolerance is\n"
    "marked failed (vkf_status, and FAILED in the md table) and the exit status is 1.";

struct LlamaOptions {
    std::string model;
    std::vector<std::uint32_t> n_prompt = {512}, n_gen = {128}, depth = {0}, sequences = {1};
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pg;
    std::uint32_t repetitions = 5;
    std::optional<std::uint32_t> sustained;
    bool no_warmup = false;
    LlamaFormat output = LlamaFormat::Md;
    std::optional<std::string> out;
    std::optional<WeightFormat> weights;
    DType kv = DType::F16;
    std::uint32_t ubatch = 512;
    std::uint32_t check_tokens = 16;
    double check_tolerance = 1e-3;
    std::optional<double> bandwidth;
    app::DeviceOptions device;
};

void declare_options(CLI::App& cli, LlamaOptions& o) {
    using namespace app;
    add_text(cli, "-m,--model", "DIR", o.model, "the checkpoint directory")->required();
    add_parsed_option(cli, "-p,--n-prompt", "N,...", "pp tests' prompt tokens; 0: none (default 512)",
                      [&o](const std::string& t) { o.n_prompt = parse_counts("--n-prompt", t, 0); });
    add_parsed_option(cli, "-n,--n-gen", "N,...", "tg tests' generated tokens; 0: none (default 128)",
                      [&o](const std::string& t) { o.n_gen = parse_counts("--n-gen", t, 0); });
    add_parsed_option(cli, "--pg", "PP,TG", "a pg test: a prompt of PP tokens, then TG generated (repeatable)",
                      [&o](const std::string& t) {
                          const std::vector<std::uint32_t> pair = parse_counts("--pg", t, 1);
                          if (pair.size() != 2) {
                              throw UsageError(fmt::format("--pg needs two counts, PP,TG, not '{}'", t));
                          }
                          o.pg.emplace_back(pair[0], pair[1]);
                      });
    add_parsed_option(cli, "-d,--n-depth", "N,...", "tokens in the cache before each test (default 0)",
                      [&o](const std::string& t) { o.depth = parse_counts("--n-depth", t, 0); });
    add_integer(cli, "-r,--repetitions", "N", o.repetitions, 1u, "timed repetitions of each test (default 5)");
    add_integer(cli, "--sustained", "N", o.sustained, 2u,
                "sustained mode: N repetitions back to back with no warm-up, each one's\n"
                "tokens/s on stderr as it ends (samples_ts holds the curve); over -r");
    cli.add_flag("--no-warmup", o.no_warmup, "no untimed prompt and token before a test's repetitions");
    add_counts(cli, "--sequences", "B,...", o.sequences,
               "vkformer: B sequences run each test together in one batch;\n"
               "t/s counts all of them (default 1)");
    add_choice(cli, "-o,--output", o.output,
               {{"json", LlamaFormat::Json},
                {"jsonl", LlamaFormat::Jsonl},
                {"csv", LlamaFormat::Csv},
                {"md", LlamaFormat::Md}},
               "output form, llama-bench's (default md)");
    add_text(cli, "--out", "FILE", o.out, "write the output here instead of stdout");
    add_weight_format(cli, o.weights, "weights on the device (default: as vkf-run loads the checkpoint)");
    add_choice(cli, "--kv", o.kv, {{"f16", DType::F16}, {"f32", DType::F32}}, "KV-cache storage (default f16)");
    add_integer(cli, "--ubatch", "N", o.ubatch, 1u, "prompt tokens per submission (default 512)");
    add_integer(cli, "--check-tokens", "N", o.check_tokens, 2u,
                "tokens of the correctness check: half a prompt, half decoding (default 16)");
    add_number(cli, "--check-tolerance", "E", o.check_tolerance, "largest relative logit error of a row (default 1e-3)",
               true);
    add_number(
        cli, "--bandwidth", "GBPS", o.bandwidth,
        "the device's copy bandwidth for vkf_bandwidth_fraction (default:\nmeasured, as vkf-bench run's ceiling)",
        true);
    add_device_options(cli, o.device, true);
}

// The tests in llama-bench's order: per depth, the pp, then the tg, then the pg tests; per
// vkformer's sequence count.
std::vector<LlamaTest> tests_of(const LlamaOptions& o) {
    std::vector<LlamaTest> tests;
    for (const std::uint32_t b : o.sequences) {
        for (const std::uint32_t d : o.depth) {
            for (const std::uint32_t p : o.n_prompt) {
                if (p > 0) {
                    tests.push_back({.n_prompt = p, .n_gen = 0, .n_depth = d, .sequences = b});
                }
            }
            for (const std::uint32_t n : o.n_gen) {
                if (n > 0) {
                    tests.push_back({.n_prompt = 0, .n_gen = n, .n_depth = d, .sequences = b});
                }
            }
            for (const auto& [p, n] : o.pg) {
                tests.push_back({.n_prompt = p, .n_gen = n, .n_depth = d, .sequences = b});
            }
        }
    }
    return tests;
}

// The host CPU's name from /proc/cpuinfo (llama-bench's cpu_info); "" where there is none.
std::string cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with("model name")) {
            const auto colon = line.find(':');
            return colon == std::string::npos ? "" : line.substr(line.find_first_not_of(' ', colon + 1));
        }
    }
    return "";
}

std::string upper(std::string text) {
    for (char& c : text) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return text;
}

// The device's copy bandwidth, measured by vkf-bench run's ceiling case.
std::optional<double> measure_bandwidth(Context& ctx) {
    SuiteSettings settings;
    settings.quick = true;
    settings.warmup = 1;
    settings.reps = 3;
    Ceilings ceilings;
    CaseEnv env{ctx, settings, ceilings};
    Result r;
    for (const BenchCase& c : ceiling_cases(ctx, settings)) {
        if (c.name == "memory bandwidth") {
            c.run(env, r);
        }
    }
    return ceilings.bandwidth_gbps;
}

// Everything of a row but the test and its samples.
LlamaRow row_template(const Context& ctx, const Model& model, const LlamaOptions& o) {
    const DeviceInfo& info = ctx.device_info();
    const ModelConfig& config = model.config();
    LlamaRow row;
    row.build_commit = std::string(build::kGitCommit).substr(0, 7);
    row.cpu_info = cpu_name();
    row.gpu_info = info.name;
    row.backends = "vkformer-Vulkan";
    row.model_filename = o.model;
    row.model_n_params = parameter_count(config);
    row.model_type =
        fmt::format("{} {:.3g}M {}", family_name(config.family), static_cast<double>(row.model_n_params) / 1e6,
                    upper(to_string(model.weight_format())));
    row.model_size = model.weights().bytes;
    row.n_batch = row.n_ubatch = o.ubatch;
    row.type_k = row.type_v = to_string(o.kv);
    row.n_gpu_layers = config.n_layer;
    row.main_gpu = info.index;
    row.vkformer_version = build::kVersion;
    row.device_name = info.name;
    row.driver_id = info.driver_id;
    row.driver_name = info.driver_name;
    row.driver_info = info.driver_info;
    row.driver_version = info.driver_version_text;
    row.api_version = fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(info.api_version),
                                  VK_API_VERSION_MINOR(info.api_version), VK_API_VERSION_PATCH(info.api_version));
    row.effective_limits = ctx.limits();
    row.weights = to_string(model.weight_format());
    row.bytes_read_per_step = decode_step_bytes(config, model.weight_format());
    row.check_tolerance = o.check_tolerance;
    row.sustained = o.sustained.has_value();
    return row;
}

int run(const LlamaOptions& o) {
    const std::vector<LlamaTest> tests = tests_of(o);
    if (tests.empty()) {
        throw app::UsageError("no tests: -p and -n are all 0 and no --pg was given");
    }
    Context ctx(o.device.context_options());
    ModelOptions model_options;
    model_options.weights = o.weights;
    const Model model(ctx, o.model, model_options);
    LlamaMeasureOptions measure{.repetitions = o.sustained.value_or(o.repetitions),
                                .warmup = !o.no_warmup && !o.sustained,
                                .chunk = o.ubatch,
                                .kv_dtype = o.kv};
    LlamaRow base = row_template(ctx, model, o);
    base.bandwidth_gbps = o.bandwidth ? o.bandwidth : measure_bandwidth(ctx);
    std::vector<double> reference;
    std::map<std::uint32_t, LlamaCheck> checks;  // by sequence count
    std::vector<LlamaRow> rows;
    bool failed = false;
    for (const LlamaTest& test : tests) {
        if (!checks.contains(test.sequences)) {
            fmt::print(stderr, "vkf-bench llama: checking {} sequence(s) against the float64 reference\n",
                       test.sequences);
            checks[test.sequences] = check_llama_model(model, test.sequences, o.check_tokens, measure, reference);
        }
        const LlamaCheck& check = checks[test.sequences];
        LlamaRow row = base;
        row.test = test;
        row.test_time = utc_now_iso8601();
        row.check_tokens = check.tokens;
        row.check_max_rel = check.max_rel;
        row.batched_max_rel = check.batched_max_rel;
        if (!(check.max_rel <= o.check_tolerance)) {
            row.failed = true;
            row.message =
                fmt::format("largest relative logit error {:.3g} against the float64 reference is over {:.3g}",
                            check.max_rel, o.check_tolerance);
        } else if (check.batched_max_rel && !(*check.batched_max_rel <= o.check_tolerance)) {
            row.failed = true;
            row.message = fmt::format("batched logits differ from the same sequences alone by {:.3g}, over {:.3g}",
                                      *check.batched_max_rel, o.check_tolerance);
        }
        fmt::print(stderr, "vkf-bench llama: {}\n", test_label(test));
        LlamaMeasureOptions each = measure;
        if (o.sustained) {
            const double tokens = static_cast<double>(test.sequences) * (test.n_prompt + test.n_gen);
            each.on_repetition = [tokens, n = *o.sustained](std::uint32_t rep, std::uint64_t ns) {
                fmt::print(stderr, "  iteration {}/{}: {:.2f} t/s\n", rep + 1, n,
                           tokens * 1e9 / static_cast<double>(ns));
            };
        }
        row.samples_ns = time_llama_test(model, test, each);
        failed = failed || row.failed;
        rows.push_back(std::move(row));
    }
    const std::string text = llama_output(rows, o.output);
    if (o.out) {
        write_file_atomically(*o.out, text, "vkf-bench llama --out");
        fmt::print(stderr, "vkf-bench llama: wrote {}\n", *o.out);
    } else {
        fmt::print("{}", text);
    }
    if (failed) {
        fmt::print(stderr, "vkf-bench llama: a row failed its correctness check (vkf_status, vkf_message)\n");
    }
    return failed ? 1 : 0;
}

}  // namespace

Command add_llama_command(CLI::App& bench) {
    CLI::App* cli = bench.add_subcommand("llama", kAbout);
    auto options = std::make_shared<LlamaOptions>();
    declare_options(*cli, *options);
    return Command{cli, [options] { return run(*options); }};
}

}  // namespace vkf::bench
