// The attention suite (suite_attention.hpp). Each case gets its own tensors and op,
// recorded once and submitted repeatedly, so the times are the kernel's alone, not
// recording, pipeline creation or uploads.

#include "apps/bench/suite_attention.hpp"

#include "apps/bench/suites.hpp"
#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/spec/alibi.hpp"
#include "host/spec/attention_params.hpp"
#include "host/util/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace vkf::bench {

std::vector<AttentionModel> attention_presets() {
    // MPT's alibi_bias_max is 8; for 32 heads its table equals the formula, but loading
    // it as a table is what a real MPT model does, so that is the path measured.
    return {
        AttentionModel{.name = "bloom-560m", .n_head = 16, .head_dims = {64}, .max_bias = 8.0f},
        AttentionModel{
            .name = "mpt-7b", .n_head = 32, .head_dims = {128}, .max_bias = 8.0f, .slopes = mpt_alibi_slopes(32, 8.0)}};
}

std::vector<AttentionModel> attention_presets_named(const std::vector<std::string>& names) {
    std::vector<AttentionModel> out;
    for (const AttentionModel& p : attention_presets()) {
        if (std::find(names.begin(), names.end(), p.name) != names.end()) {
            out.push_back(p);
        }
    }
    return out;
}

namespace {

struct AttentionCase {
    AttentionModel model;
    bool decode = false;
    DType dtype = DType::F32;
    bool naive = false;
    AttentionShape shape{};
    std::uint32_t window = 0;
    AttentionKernel kernel = AttentionKernel::Auto;
};

// Unmasked (query, key) pairs: the work a kernel that skips masked tiles has to do. Under
// the causal mask query row i sits at position kv_len - q_len + i and sees keys 0..pos, or
// pos - window .. pos with a window.
std::uint64_t unmasked_pairs(const AttentionShape& s, std::uint32_t window) {
    std::uint64_t pairs = 0;
    for (std::uint32_t i = 0; i < s.q_len; ++i) {
        const std::int64_t position = std::int64_t{s.kv_len} - s.q_len + i;
        const std::int64_t first = window == 0 ? 0 : std::max<std::int64_t>(position - window, 0);
        pairs += static_cast<std::uint64_t>(std::clamp<std::int64_t>(position + 1 - first, 0, s.kv_len));
    }
    return pairs;
}

// Q.K^T and P.V: a multiply and an add each, per head_dim element of every unmasked pair.
std::uint64_t attention_flops(const AttentionShape& s, std::uint32_t window) {
    return 4ull * s.batch * s.n_head * s.head_dim * unmasked_pairs(s, window);
}

// Q, K, V read once and O written once: the least traffic any attention kernel has.
std::uint64_t tensor_bytes(const AttentionShape& s, DType dtype) {
    return (2 * q_element_count(s) + 2 * kv_element_count(s)) * element_size(dtype);
}

AttentionParams params_of(const AttentionCase& c) {
    return AttentionParams{.shape = c.shape,
                           .mask = MaskMode::Causal,
                           .alibi = AlibiMode::Causal,
                           .max_bias = c.model.max_bias,
                           .slopes = c.model.slopes,
                           .window = c.window};
}

// "bloom-560m prefill f16 tiled q=256 kv=256". Batch and head size appear only where the
// sweep varies them, so that names match result files of earlier runs for comparison.
std::string case_name(const AttentionCase& c, bool naive) {
    const AttentionShape& s = c.shape;
    return fmt::format("{} {} {} {}{}{} q={} kv={}{}", c.model.name, c.decode ? "decode" : "prefill",
                       to_string(c.dtype), naive ? "naive" : "tiled", s.batch != 1 ? fmt::format(" b={}", s.batch) : "",
                       c.model.head_dims.size() > 1 ? fmt::format(" d={}", s.head_dim) : "", s.q_len, s.kv_len,
                       c.window != 0 ? fmt::format(" w={}", c.window) : "");
}

// The naive result's speed against the tiled twin run just before it: naive ms / tiled ms.
std::optional<double> speedup_over(const AttentionCase& c, const std::vector<double>& naive_ms,
                                   const std::vector<Result>* earlier) {
    if (earlier == nullptr || naive_ms.empty()) {
        return std::nullopt;
    }
    const std::string twin = case_name(c, false);
    for (const Result& r : *earlier) {
        if (r.suite == "attention" && r.name == twin && r.stats && r.stats->median > 0.0) {
            return stats_of(naive_ms).median / r.stats->median;
        }
    }
    return std::nullopt;
}

void run_case(const AttentionCase& c, CaseEnv& env, Result& r) {
    Context& ctx = env.ctx;
    const AttentionShape& shape = c.shape;
    // Attention binds each of Q, K, V and O whole: over the range it cannot run.
    const std::uint64_t row_bytes = std::uint64_t{shape.n_head} * shape.head_dim * element_size(c.dtype);
    const std::uint64_t largest = row_bytes * shape.batch * std::max(shape.q_len, shape.kv_len);
    const std::uint64_t range = ctx.limits().storage_buffer_range;
    if (largest > range) {
        throw Skip{fmt::format("a {}-byte Q/K/V tensor exceeds maxStorageBufferRange ({} bytes)", largest, range)};
    }
    const AttentionParams params = params_of(c);
    r.flops = attention_flops(shape, c.window);
    r.bytes = tensor_bytes(shape, c.dtype);

    // The op first: a shape the device cannot run fails before any upload.
    std::optional<Attention> tiled;
    std::optional<NaiveAttention> naive;
    std::uint64_t own_bytes = 0;  // the op's scratch, or the naive op's scores
    if (c.naive) {
        if (const auto impossible = naive_attention_impossible(ctx.limits(), params)) {
            throw Skip{"naive attention impossible: " + *impossible};
        }
        naive.emplace(ctx, params, c.dtype);
        own_bytes = naive->scores_bytes();
        r.plan = "naive three-pass (n x n float32 scores)";
    } else {
        tiled.emplace(ctx, params, c.dtype, AttentionOptions{.kernel = c.kernel});
        own_bytes = tiled->scratch_bytes();
        r.plan = tiled->plan().describe();
        // The tiled kernel's variants (also in the plan's words): subgroup size of its row
        // reductions (0: shared memory), and fp16 arithmetic (1) or fp32 (0).
        if (tiled->plan().kernel == AttentionKernel::Tiled) {
            r.extra.emplace_back("subgroup_reduce", static_cast<double>(tiled->plan().subgroup_reduce));
            r.extra.emplace_back("fp16_arithmetic", tiled->plan().fp16_arithmetic ? 1.0 : 0.0);
        }
    }
    // Each tensor its own seed, the same in every case: runs stay comparable.
    const DeviceTensor q = upload_tensor(ctx, random_uniform(q_element_count(shape), 0x5eed01), c.dtype, "bench Q");
    const DeviceTensor k = upload_tensor(ctx, random_uniform(kv_element_count(shape), 0x5eed02), c.dtype, "bench K");
    const DeviceTensor v = upload_tensor(ctx, random_uniform(kv_element_count(shape), 0x5eed03), c.dtype, "bench V");
    const DeviceTensor o(ctx, q_element_count(shape), c.dtype, "bench O");
    const auto list = ctx.command_list(ctx.limits().timestamps);
    if (naive) {
        naive->record(*list, q.range(), k.range(), v.range(), o.range());
    } else {
        tiled->record(*list, q.range(), k.range(), v.range(), o.range());
    }
    r.reps_ms = time_list(ctx, *list, env.settings.warmup, env.settings.reps);
    r.extra.emplace_back("memory_bytes", static_cast<double>(r.bytes + own_bytes));
    if (c.naive) {
        if (const auto speedup = speedup_over(c, r.reps_ms, env.earlier)) {
            r.extra.emplace_back("speedup", *speedup);
        }
    }
}

BenchCase bench_case(const AttentionCase& c) {
    const AttentionShape& s = c.shape;
    BenchCase bc;
    bc.name = case_name(c, c.naive);
    bc.params = {{"model", c.model.name},
                 {"mode", std::string(c.decode ? "decode" : "prefill")},
                 {"dtype", std::string(to_string(c.dtype))},
                 {"impl", std::string(c.naive ? "naive" : "tiled")},
                 {"batch", std::int64_t{s.batch}},
                 {"n_head", std::int64_t{s.n_head}},
                 {"head_dim", std::int64_t{s.head_dim}},
                 {"q_len", std::int64_t{s.q_len}},
                 {"kv_len", std::int64_t{s.kv_len}}};
    if (c.window != 0) {  // absent otherwise, as in result files of earlier runs
        bc.params.emplace_back("window", std::int64_t{c.window});
    }
    if (c.kernel != AttentionKernel::Auto && !c.naive) {  // likewise
        bc.params.emplace_back("kernel", std::string(to_string(c.kernel)));
    }
    bc.flops = attention_flops(s, c.window);
    bc.bytes = tensor_bytes(s, c.dtype);
    bc.run = [c](CaseEnv& env, Result& r) { run_case(c, env, r); };
    return bc;
}

}  // namespace

std::vector<BenchCase> attention_cases(const Context&, const SuiteSettings& settings) {
    const AttentionSweep& sweep = settings.attention;
    std::vector<BenchCase> cases;
    for (const AttentionModel& model : sweep.models) {
        std::vector<std::pair<bool, AttentionShape>> shapes;  // (decode, shape)
        for (const bool decode : {false, true}) {
            for (const std::uint32_t d : model.head_dims) {
                for (const std::uint32_t length : decode ? sweep.decode_kv : sweep.lengths) {
                    shapes.emplace_back(decode, AttentionShape{.batch = sweep.batch,
                                                               .q_len = decode ? 1 : length,
                                                               .kv_len = length,
                                                               .n_head = model.n_head,
                                                               .n_kv_head = model.n_head,
                                                               .head_dim = d});
                }
            }
        }
        if (sweep.cheapest_first) {
            std::stable_sort(shapes.begin(), shapes.end(), [&sweep](const auto& a, const auto& b) {
                return attention_flops(a.second, sweep.window) < attention_flops(b.second, sweep.window);
            });
        }
        for (std::size_t i = 0; i < shapes.size(); ++i) {
            const auto& [decode, shape] = shapes[i];
            std::vector<DType> dtypes = sweep.dtypes;
            if (sweep.alternate_dtypes && !dtypes.empty()) {
                dtypes = {sweep.dtypes[i % sweep.dtypes.size()]};
            }
            for (const DType dtype : dtypes) {
                for (const bool naive : {false, true}) {
                    if (naive && !(decode ? sweep.naive_decode : sweep.naive_prefill)) {
                        continue;
                    }
                    cases.push_back(bench_case(AttentionCase{.model = model,
                                                             .decode = decode,
                                                             .dtype = dtype,
                                                             .naive = naive,
                                                             .shape = shape,
                                                             .window = sweep.window,
                                                             .kernel = sweep.kernel}));
                }
            }
        }
    }
    return cases;
}

}  // namespace vkf::bench
