// `vkf-bench run` (commands.hpp): the suites of the registry on one device, a text table on
// stdout as results arrive, progress on stderr, and a result file (--out) for compare.

#include "apps/bench/commands.hpp"
#include "apps/bench/result_table.hpp"
#include "apps/bench/runner.hpp"
#include "apps/common/kv_flags.hpp"
#include "apps/common/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

namespace vkf::bench {

namespace {

constexpr const char* kAbout =
    "Measures the device's ceilings (memory bandwidth, fp32/fp16 FMA rate, dispatch overhead,\n"
    "host<->device transfers), then vkformer's kernels on the model presets, and places each\n"
    "kernel result against the ceilings. Each result is the median of --reps GPU-timed\n"
    "submissions after --warmup untimed ones, with min, max and quartiles. --out writes a\n"
    "result file (JSON, see docs/FORMATS.md \"Benchmark result files\") for `vkf-bench compare`.\n"
    "\n"
    "suites (--suites, in this order):\n"
    "  ceilings    memory bandwidth, fp32 and fp16 FMA, dispatch overhead, transfers\n"
    "  attention   tiled ALiBi attention (and the naive baseline for prefill), f32 and f16\n"
    "  matmul      the presets' linear layers at m = 1 and the prefill rows, --weights formats,\n"
    "              fp32 and fp16 arithmetic where both run\n"
    "  block       one transformer block: prefill of the prefill rows, one decoding step\n"
    "  model       whole models (LM head included): prefill and decoding tokens/s, in each\n"
    "              --weights format, bytes read per token against the copy bandwidth;\n"
    "              --batch sequences decoding together: aggregate and per-sequence tokens/s\n"
    "  prefix      (only when named) the prefix cache: each --prefill-m prompt cold, then\n"
    "              with one more token from the cached blocks: warm and cold time, share cached\n"
    "  startup     pipelines a model needs, their creation time cold and from the disk\n"
    "              cache, time to first and second token (the first --weights format)\n"
    "  split       (only when named) a layer split's cost: vkf-run on a random fp16\n"
    "              checkpoint of each preset, on one device, over 2 and 3 stages in one\n"
    "              process (--devices) and under mpirun -n 1, 2, 3: decoding ms per token,\n"
    "              time moving activations per token and its share of the run\n";

constexpr const char* kFooter =
    "A case the device cannot run (no float16 arithmetic, a buffer over a limit, more memory\n"
    "than allowed) is recorded as skipped with the reason; a case that throws is recorded as\n"
    "failed and the exit code is 1.";

// The command line as given; what is unset takes --quick's value or the default.
struct RunOptions {
    std::vector<std::string> suites;
    bool quick = false;
    std::optional<std::vector<std::string>> presets;
    std::optional<std::vector<std::uint32_t>> lengths, decode_kv, prefill_m, batch;
    std::optional<std::vector<std::string>> weights;
    bool no_naive = false;
    bool matmul_coopmat = false;
    std::optional<std::uint64_t> max_memory;
    app::KvCacheFlags kv;
    std::vector<KvStorage> kv_also;
    std::optional<MatmulKernel> matmul_kernel;
    std::optional<std::uint32_t> window;
    std::optional<std::vector<std::string>> modes;
    std::optional<std::uint32_t> warmup, reps;
    std::optional<std::string> out;
    bool json = false;
    ProgressMode progress = ProgressMode::Auto;
    app::DeviceOptions device;
};

std::vector<std::string> suite_names(bool defaults_only = false) {
    std::vector<std::string> names;
    for (const Suite& s : suite_registry()) {
        if (!defaults_only || s.by_default) {
            names.push_back(s.name);
        }
    }
    return names;
}

void declare_options(CLI::App& cli, RunOptions& o) {
    using namespace app;
    cli.footer(kFooter);
    add_parsed_option(cli, "--suites", "LIST", "comma-separated suites (default: all but prefix and split)",
                      [&o](const std::string& text) {
                          o.suites.clear();
                          for (const std::string& word : split_list(text)) {
                              if (!find_suite(word)) {
                                  throw UsageError(fmt::format("--suites: unknown suite '{}' (suites: {})", word,
                                                               fmt::join(suite_names(), ", ")));
                              }
                              o.suites.push_back(word);
                          }
                      });
    cli.add_flag("--quick", o.quick,
                 "a few minutes on lavapipe: bloom-560m only, attention prefill\n"
                 "64,128,256 and decode 256,1024, matmul and block m = 1 and 32,\n"
                 "whole model 8 tokens, warmup 1, reps 3, smaller ceilings;\n"
                 "options given explicitly still win");
    add_parsed_option(cli, "--presets", "LIST",
                      "bloom-560m, mpt-7b, bloom-24x64 (block and model only: 24 layers of\n"
                      "hidden 64) (default bloom-560m and mpt-7b; --quick: bloom-560m)",
                      [&o](const std::string& text) {
                          o.presets = parse_words("--presets", text, {"bloom-560m", "mpt-7b", "bloom-24x64"});
                      });
    add_counts(cli, "--lengths", "N,...", o.lengths, "attention prefill lengths (default 512,1024,2048,4096,8192)");
    add_counts(cli, "--decode-kv", "N,...", o.decode_kv, "attention KV lengths for decoding (default 512,2048,8192)");
    add_counts(cli, "--prefill-m", "N,...", o.prefill_m,
               "rows of a prefill for matmul, block and model (default 512);\n"
               "m = 1 always runs, and decoding steps run after m tokens");
    add_counts(cli, "--batch", "B,...", o.batch,
               "model suite: B sequences decode together in one batch (paged\n"
               "KV cache) after a prefill of m tokens each, for each B; aggregate\n"
               "and per-sequence tokens/s, weight bytes read per token, KV blocks\n"
               "(default 1)");
    add_parsed_option(cli, "--weights", "LIST",
                      "weight formats of the matmul, block and model suites: f32, f16,\n"
                      "q8_0, q4_0 (default f16)",
                      [&o](const std::string& text) {
                          o.weights = parse_words("--weights", text, {"f32", "f16", "q8_0", "q4_0"});
                      });
    cli.add_flag("--no-naive", o.no_naive, "leave out the naive attention baseline");
    add_choice(cli, "--matmul-kernel", o.matmul_kernel,
               {{"auto", MatmulKernel::Auto},
                {"tiled", MatmulKernel::Tiled},
                {"gemv", MatmulKernel::Gemv},
                {"blocked", MatmulKernel::Blocked},
                {"rowdot", MatmulKernel::RowDot}},
               "matmul suite: force this kernel on every case (a GPU's tiled or\n"
               "gemv on lavapipe; cases it cannot run are skipped) (default auto)");
    cli.add_flag("--matmul-coopmat", o.matmul_coopmat,
                 "matmul suite: time the cooperative-matrix kernel (tensor cores; opt-in,\n"
                 "never run by default) forced on the f16 prefill rows instead of the\n"
                 "plans' kernels; skipped where the device lacks VK_NV_cooperative_matrix");
    add_parsed_option(cli, "--max-memory", "SIZE",
                      "device memory one case may use (K/M/G suffixes; default half\n"
                      "the largest device-local heap); bigger cases are skipped",
                      [&o](const std::string& text) { o.max_memory = parse_size("--max-memory", text); });
    add_kv_flags(cli, o.kv,
                 "KV-cache storage of the block and model suites (default f16,\nas vkf-run; q8_0 and q4_0: not "
                 "the start-up suite)");
    add_parsed_option(
        cli, "--kv-also", "LIST",
        "block and model suites: also time these KV-cache storages (f32,\n"
        "f16, q8_0, q4_0), each case right after its --kv twin in the\n"
        "same run, e.g. --kv f16 --kv-also q8_0 (default none)",
        [&o](const std::string& text) {
            for (const std::string& word : parse_words("--kv-also", text, {"f32", "f16", "q8_0", "q4_0"})) {
                const QuantFormat q = parse_quant_format(word).value_or(QuantFormat::None);
                o.kv_also.push_back(KvStorage{word == "f32" ? DType::F32 : DType::F16, q, q, word});
            }
        });
    add_window(cli, o.window,
               "key window of the block and model suites' sessions: each token\n"
               "sees the W before it, the cache keeps what the window sees\n"
               "(default 0: full attention)");
    add_parsed_option(cli, "--modes", "LIST",
                      "steps the block and model suites time: prefill, decode\n"
                      "(default both; decode alone still fills the cache once)",
                      [&o](const std::string& text) {
                          o.modes = parse_words("--modes", text, {"prefill", "decode"});
                      });
    add_integer(cli, "--warmup", "N", o.warmup, 0u, "untimed submissions per case (default 2)");
    add_integer(cli, "--reps", "N", o.reps, 1u, "timed submissions per case (default 7)");
    add_text(cli, "--out", "FILE", o.out, "write the result file here");
    cli.add_flag("--json", o.json, "print the result file's JSON on stdout instead of the table");
    add_choice(cli, "--progress", o.progress,
               {{"auto", ProgressMode::Auto},
                {"bar", ProgressMode::Bar},
                {"lines", ProgressMode::Lines},
                {"none", ProgressMode::None}},
               "auto (a bar when stderr is a terminal, else a line per case),\nbar, lines or none (default auto)");
    add_device_options(cli, o.device, true);
}

SuiteSettings settings_of(const RunOptions& o) {
    using Counts = std::vector<std::uint32_t>;
    const bool quick = o.quick;
    SuiteSettings s;
    s.quick = quick;
    s.warmup = o.warmup.value_or(quick ? 1 : 2);
    s.reps = o.reps.value_or(quick ? 3 : 7);
    s.presets = o.presets.value_or(quick ? std::vector<std::string>{"bloom-560m"}
                                         : std::vector<std::string>{"bloom-560m", "mpt-7b"});
    s.prefill_m = o.prefill_m.value_or(quick ? Counts{32} : Counts{512});
    s.max_memory = o.max_memory.value_or(0);
    s.weights = o.weights.value_or(std::vector<std::string>{"f16"});
    s.kv_dtype = o.kv.dense;
    s.kv_k_quant = o.kv.k_quant();
    s.kv_v_quant = o.kv.v_quant();
    s.kv_name = o.kv.name();
    s.kv_also = o.kv_also;
    s.matmul_kernel = o.matmul_kernel.value_or(MatmulKernel::Auto);
    s.window = o.window.value_or(0);
    s.batch = o.batch.value_or(s.batch);
    s.matmul_coopmat = o.matmul_coopmat;
    if (o.modes) {
        s.prefill = std::find(o.modes->begin(), o.modes->end(), "prefill") != o.modes->end();
        s.decode = std::find(o.modes->begin(), o.modes->end(), "decode") != o.modes->end();
    }
    s.attention = AttentionSweep{
        .models = attention_presets_named(s.presets),
        .lengths = o.lengths.value_or(quick ? Counts{64, 128, 256} : Counts{512, 1024, 2048, 4096, 8192}),
        .decode_kv = o.decode_kv.value_or(quick ? Counts{256, 1024} : Counts{512, 2048, 8192}),
        .naive_prefill = !o.no_naive,
    };
    return s;
}

int run(const RunOptions& o, const std::string& command_line) {
    const std::vector<std::string> suites = o.suites.empty() ? suite_names(true) : o.suites;
    const SuiteSettings settings = settings_of(o);
    Context ctx(o.device.context_options());
    const Run run = run_suites(ctx, settings, suites, command_line, o.progress, !o.json);
    if (o.out) {
        write_run_file(*o.out, run);
        fmt::print(stderr, "vkf-bench: wrote {}\n", *o.out);
    }
    if (o.json) {
        fmt::print("{}\n", json_text(run_json(run)));
    } else {
        print_summary(run, !o.out);
    }
    return run_exit_status(ctx, run);
}

}  // namespace

Command add_run_command(CLI::App& bench, const std::string& command_line) {
    CLI::App* cli = bench.add_subcommand("run", kAbout);
    auto options = std::make_shared<RunOptions>();
    declare_options(*cli, *options);
    return Command{cli, [options, command_line] { return run(*options, command_line); }};
}

}  // namespace vkf::bench
