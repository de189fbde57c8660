// `vkf-bench attention` (commands.hpp): the attention suite alone, each tiled case followed
// by the naive baseline of the same shape, with the options and defaults of the attention
// benchmark that came before `vkf-bench run`, and its JSON document (one object per shape
// with both times and the speedup), which scripts read.

#include "apps/bench/commands.hpp"
#include "apps/bench/result_table.hpp"
#include "apps/bench/runner.hpp"
#include "apps/common/options.hpp"
#include "base/error.hpp"
#include "host/ops/attention.hpp"
#include "runtime/device_info_json.hpp"
#include "vkf_version.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

namespace vkf::bench {

namespace {

constexpr const char* kAbout =
    "Times the tiled (flash) ALiBi attention kernel against the naive three-pass baseline\n"
    "(scores, softmax, P.V through an n x n float32 buffer) on one device: the attention\n"
    "suite of `vkf-bench run` with a sweep of its own. Every case runs on seeded random Q, K,\n"
    "V; each op is recorded once and submitted --warmup times, then --reps times, and the\n"
    "median GPU time (timestamp queries) of those is reported.\n"
    "\n"
    "Without --preset: batch 1, 16 heads, head_dim 64 and 128, causal mask with causal\n"
    "ALiBi (max bias 8); prefill at 512, 2048 and 8192 tokens and decoding one token\n"
    "against a 4096-key cache, in f32 and f16.\n";

constexpr const char* kFooter =
    "A case that throws is reported as failed and the sweep goes on; the exit code is 1\n"
    "when any case failed. The naive op is skipped as impossible where its scores buffer\n"
    "exceeds maxStorageBufferRange (128 MiB on lavapipe and many phones).\n"
    "\n"
    "environment:\n"
    "  VKF_DEVICE, VKF_LIMITS  as --device and --limits\n"
    "  VKF_TIMEOUT_MS          as --timeout, in milliseconds\n"
    "  VKF_VALIDATION          1 enables the Khronos validation layer; any message fails";

// The command line as given; what is unset takes --quick's value or the default.
struct AttentionOptions {
    std::optional<std::string> preset;
    std::optional<std::vector<std::uint32_t>> lengths, decode_kv, head_dims;
    std::vector<DType> dtypes = {DType::F32, DType::F16};
    bool prefill = true, decode = true;
    std::uint32_t batch = 1;
    std::uint32_t window = 0;
    std::optional<std::uint32_t> heads, warmup, reps;
    bool no_naive = false;
    AttentionKernel kernel = AttentionKernel::Auto;
    bool json = false;
    bool quick = false;
    app::DeviceOptions device;
};

void declare_options(CLI::App& cli, AttentionOptions& o) {
    using namespace app;
    using DTypes = std::vector<DType>;
    cli.footer(kFooter);
    CLI::Option* preset =
        add_choice(cli, "--preset", o.preset, {{"bloom-560m", "bloom-560m"}, {"mpt-7b", "mpt-7b"}, {"all", "all"}},
                   "bloom-560m (16 heads, head_dim 64, ALiBi max bias 8),\n"
                   "mpt-7b (32 heads, head_dim 128, MPT's slope table, max bias 8),\n"
                   "or all (both); replaces --heads and --head-dim");
    add_counts(cli, "--lengths", "N,...", o.lengths, "prefill lengths, q_len = kv_len (default 512,2048,8192)");
    add_choice(cli, "--dtype", o.dtypes,
               {{"f32", DTypes{DType::F32}}, {"f16", DTypes{DType::F16}}, {"both", DTypes{DType::F32, DType::F16}}},
               "storage type of Q, K, V, O (default both)");
    add_parsed_option(cli, "--mode", "prefill|decode|both",
                      "prefill, or one query row against a KV cache (default both)", [&o](const std::string& text) {
                          const std::string mode = parse_choice("--mode", text, {"prefill", "decode", "both"});
                          o.prefill = mode != "decode";
                          o.decode = mode != "prefill";
                      });
    add_counts(cli, "--decode-kv", "N,...", o.decode_kv, "KV cache lengths for decoding (default 4096)");
    add_integer(cli, "--batch", "N", o.batch, 1u, "batch size (default 1)");
    add_integer(cli, "--window", "W", o.window, 0u,
                "key window: each query sees itself and the W keys before it\n"
                "(MPT's sliding_window_size; default 0, full attention)");
    CLI::Option* heads = add_integer(cli, "--heads", "N", o.heads, 1u, "query heads, as many KV heads (default 16)");
    CLI::Option* head_dims =
        add_parsed_option(cli, "--head-dim", "D,...", "head sizes (default 64,128)", [&o](const std::string& text) {
            o.head_dims = parse_counts("--head-dim", text);
            for (const std::uint32_t d : *o.head_dims) {
                try {
                    check_head_dim(d);
                } catch (const Error& e) {
                    throw UsageError(std::string("--head-dim: ") + e.what());
                }
            }
        });
    preset->excludes(heads)->excludes(head_dims);
    add_integer(cli, "--warmup", "N", o.warmup, 0u, "untimed submissions per op (default 2)");
    add_integer(cli, "--reps", "N", o.reps, 1u, "timed submissions per op (default 5)");
    cli.add_flag("--no-naive", o.no_naive, "time the tiled kernel only");
    add_choice(cli, "--kernel", o.kernel,
               {{"auto", AttentionKernel::Auto}, {"tiled", AttentionKernel::Tiled}, {"rows", AttentionKernel::Rows}},
               "the attention kernel: auto (rows on CPU devices, else tiled),\ntiled or rows (default auto)");
    cli.add_flag("--json", o.json, "print one JSON document instead of the table");
    cli.add_flag("--quick", o.quick,
                 "CI smoke: lengths 256 and 1024 (decoding at 1024), warmup 1,\n"
                 "reps 3, and each shape in one dtype, the dtypes taking turns;\n"
                 "options given explicitly still win");
    add_device_options(cli, o.device, true);
}

SuiteSettings settings_of(const AttentionOptions& o) {
    using Counts = std::vector<std::uint32_t>;
    SuiteSettings s;
    s.quick = o.quick;
    s.warmup = o.warmup.value_or(o.quick ? 1 : 2);
    s.reps = o.reps.value_or(o.quick ? 3 : 5);
    AttentionSweep& sweep = s.attention;
    if (o.preset) {
        sweep.models = attention_presets_named(*o.preset == "all" ? std::vector<std::string>{"bloom-560m", "mpt-7b"}
                                                                  : std::vector<std::string>{*o.preset});
    } else {
        sweep.models = {AttentionModel{
            .name = "generic", .n_head = o.heads.value_or(16), .head_dims = o.head_dims.value_or(Counts{64, 128})}};
    }
    if (o.prefill) {
        sweep.lengths = o.lengths.value_or(o.quick ? Counts{256, 1024} : Counts{512, 2048, 8192});
    }
    if (o.decode) {
        sweep.decode_kv = o.decode_kv.value_or(Counts{o.quick ? 1024u : 4096u});
    }
    sweep.dtypes = o.dtypes;
    sweep.batch = o.batch;
    sweep.window = o.window;
    sweep.naive_prefill = sweep.naive_decode = !o.no_naive;
    sweep.kernel = o.kernel;
    sweep.alternate_dtypes = o.quick;
    sweep.cheapest_first = true;
    return s;
}

// --- the JSON document -----------------------------------------------------------------

using Json = nlohmann::ordered_json;

template <class T>
Json value_or_null(const std::optional<T>& v) {
    return v ? Json(*v) : Json(nullptr);
}

std::int64_t int_param(const Result& r, std::string_view name) {
    const Param* p = r.param(name);
    return p != nullptr ? std::get<std::int64_t>(p->value) : 0;
}

std::string text_param(const Result& r, std::string_view name) {
    const Param* p = r.param(name);
    return p != nullptr ? std::get<std::string>(p->value) : "";
}

Json settings_json(const Context& ctx, const SuiteSettings& s, const AttentionOptions& o) {
    const AttentionSweep& sweep = s.attention;
    Json models = Json::array();
    for (const AttentionModel& model : sweep.models) {
        models.push_back({{"name", model.name},
                          {"n_head", model.n_head},
                          {"head_dims", model.head_dims},
                          {"max_bias", static_cast<double>(model.max_bias)},
                          {"slopes", model.slopes.empty() ? "formula" : "table"}});
    }
    Json dtypes = Json::array();
    for (const DType dtype : sweep.dtypes) {
        dtypes.push_back(to_string(dtype));
    }
    Json modes = Json::array();
    if (o.prefill) {
        modes.push_back("prefill");
    }
    if (o.decode) {
        modes.push_back("decode");
    }
    return {{"models", models},
            {"lengths", sweep.lengths},
            {"decode_kv", sweep.decode_kv},
            {"dtypes", dtypes},
            {"modes", modes},
            {"batch", sweep.batch},
            {"window", sweep.window},
            {"warmup", s.warmup},
            {"reps", s.reps},
            {"naive", !o.no_naive},
            {"kernel", to_string(o.kernel)},
            {"quick", o.quick},
            {"mask", "causal"},
            {"alibi", "causal"},
            {"timing", timing_name(ctx)},
            {"limit_overrides", ctx.overrides().describe()}};
}

Json plan_json(const AttentionPlan& p) {
    return {{"rows_per_group", p.rows_per_group},   {"keys_per_tile", p.keys_per_tile},
            {"threads_per_row", p.threads_per_row}, {"workgroup_size", p.workgroup_size},
            {"shared_bytes", p.shared_bytes},       {"n_splits", p.n_splits},
            {"kv_split_len", p.kv_split_len}};
}

// One shape: the tiled result and, when it ran or was refused, the naive one.
Json shape_json(const Context& ctx, const Result& tiled, const Result* naive, std::uint32_t window) {
    const AttentionShape shape{.batch = static_cast<std::uint32_t>(int_param(tiled, "batch")),
                               .q_len = static_cast<std::uint32_t>(int_param(tiled, "q_len")),
                               .kv_len = static_cast<std::uint32_t>(int_param(tiled, "kv_len")),
                               .n_head = static_cast<std::uint32_t>(int_param(tiled, "n_head")),
                               .n_kv_head = static_cast<std::uint32_t>(int_param(tiled, "n_head")),
                               .head_dim = static_cast<std::uint32_t>(int_param(tiled, "head_dim"))};
    const bool tiled_ok = tiled.status == Status::Ok && tiled.stats;
    const bool naive_ok = naive != nullptr && naive->status == Status::Ok && naive->stats;
    const bool naive_failed = naive != nullptr && naive->status == Status::Failed;
    std::optional<std::string> error;
    if (!tiled_ok) {
        error = tiled.message;
    } else if (naive_failed) {
        error = "naive: " + naive->message;
    }
    std::optional<std::string> naive_impossible;
    if (naive != nullptr && naive->status == Status::Skipped) {
        constexpr std::string_view kPrefix = "naive attention impossible: ";
        naive_impossible = naive->message.starts_with(kPrefix) ? naive->message.substr(kPrefix.size()) : naive->message;
    }
    const auto memory = [](const Result* r) -> std::optional<std::uint64_t> {
        const auto bytes = r != nullptr ? r->extra_value("memory_bytes") : std::nullopt;
        return bytes ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*bytes)) : std::nullopt;
    };
    const std::optional<std::uint64_t> tiled_memory = memory(&tiled);
    const std::optional<std::uint64_t> naive_memory = memory(naive);
    std::optional<double> tiled_ms, naive_ms, speedup, tflops;
    if (tiled_ok) {
        tiled_ms = tiled.stats->median;
        tflops = tiled.gflops ? std::optional<double>(*tiled.gflops * 1e-3) : std::nullopt;
    }
    if (naive_ok) {
        naive_ms = naive->stats->median;
        speedup = naive->extra_value("speedup");  // the suite's, against this tiled twin
    }
    Json json = {{"model", text_param(tiled, "model")},
                 {"mode", text_param(tiled, "mode")},
                 {"dtype", text_param(tiled, "dtype")},
                 {"batch", shape.batch},
                 {"n_head", shape.n_head},
                 {"n_kv_head", shape.n_kv_head},
                 {"head_dim", shape.head_dim},
                 {"q_len", shape.q_len},
                 {"kv_len", shape.kv_len},
                 {"status", to_string(tiled.status)},
                 {"failed", error.has_value()},
                 {"error", value_or_null(error)},
                 {"tiled_ms_median", value_or_null(tiled_ms)},
                 {"tiled_ms_reps", tiled.reps_ms},
                 {"naive_ms_median", value_or_null(naive_ms)},
                 {"naive_ms_reps", naive != nullptr ? naive->reps_ms : std::vector<double>{}},
                 {"naive_impossible", value_or_null(naive_impossible)},
                 {"speedup", value_or_null(speedup)},
                 {"tflops", value_or_null(tflops)},
                 {"gbps", value_or_null(tiled_ok ? tiled.gbps : std::nullopt)},
                 {"flops", tiled.flops},
                 {"io_bytes", tiled.bytes},
                 {"memory_bytes", tiled_memory.value_or(0) + (naive_memory ? *naive_memory - tiled.bytes : 0)},
                 {"tiled_memory_bytes", tiled_memory.value_or(0)},
                 {"naive_memory_bytes", value_or_null(naive_memory)},
                 {"plan", nullptr},
                 {"plan_text", nullptr}};
    if (tiled_ok) {
        // The plan Attention chose, as numbers: planning is deterministic for a device and shape.
        json["plan"] = plan_json(plan_attention(attention_device(ctx), shape, {}, window));
        json["plan_text"] = tiled.plan;
    }
    return json;
}

Json attention_json(const Context& ctx, const SuiteSettings& s, const AttentionOptions& o, const Run& run) {
    Json results = Json::array();
    for (const Result& r : run.results) {
        if (text_param(r, "impl") != "tiled") {
            continue;
        }
        std::string twin = r.name;
        twin.replace(twin.find(" tiled"), 6, " naive");
        const auto naive =
            std::find_if(run.results.begin(), run.results.end(), [&](const Result& n) { return n.name == twin; });
        results.push_back(shape_json(ctx, r, naive != run.results.end() ? &*naive : nullptr, o.window));
    }
    return {{"vkformer_version", build::kVersion},
            {"device", ctx.device_info()},
            {"effective_limits", ctx.limits()},
            {"settings", settings_json(ctx, s, o)},
            {"results", results}};
}

int run(const AttentionOptions& o) {
    const SuiteSettings settings = settings_of(o);
    Context ctx(o.device.context_options());
    const Run run = run_suites(ctx, settings, {"attention"}, "", ProgressMode::Auto, !o.json);
    if (o.json) {
        fmt::print("{}\n", json_text(attention_json(ctx, settings, o, run)));
    } else {
        print_summary(run, false);
    }
    return run_exit_status(ctx, run);
}

}  // namespace

Command add_attention_command(CLI::App& bench) {
    CLI::App* cli = bench.add_subcommand("attention", kAbout);
    auto options = std::make_shared<AttentionOptions>();
    declare_options(*cli, *options);
    return Command{cli, [options] { return run(*options); }};
}

}  // namespace vkf::bench
