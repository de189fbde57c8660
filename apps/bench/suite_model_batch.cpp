// The model suite's batched decoding cases (vkf-bench run --batch): B sequences of the
// presets' shapes, with synthetic weights and distinct synthetic prompts of m tokens, run
// their prefill in one Batch (host/model/batch.hpp) and then decode together, one token of
// every sequence per step, as vkf-run --parallel runs them. A case's time is one step's
// (B tokens): the GPU time of its submission, or the host wall clock where the device has
// no timestamps. The weights are read once per step whatever B is, so the bytes read per
// generated token fall as 1/B and the aggregate tokens/s rise until the step is bound by
// arithmetic or attention instead. `extra` holds the aggregate and per-sequence tokens/s,
// the weight bytes read per generated token and the KV blocks in use.

#include "apps/bench/model_work.hpp"
#include "apps/bench/suites.hpp"
#include "base/error.hpp"
#include "host/model/batch.hpp"
#include "host/sched/kv_blocks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>

namespace vkf::bench {

namespace {

struct BatchShape {
    ModelConfig config;
    WeightFormat format;
    DType kv_dtype = DType::F16;
    std::uint32_t batch = 1;
    std::uint32_t context = 0;                   // prompt tokens of every sequence before the timed steps
    std::uint32_t window = 0;                    // key window (0: full attention)
    QuantFormat kv_k_quant = QuantFormat::None;  // a quantized K/V cache (SuiteSettings)
    QuantFormat kv_v_quant = QuantFormat::None;
};

void run_batch_case(const BatchShape& shape, CaseEnv& env, Result& r) {
    Context& ctx = env.ctx;
    const SuiteSettings& st = env.settings;
    const ModelConfig& config = shape.config;
    const std::uint32_t b = shape.batch, m = shape.context;
    const std::uint32_t steps = st.warmup + st.reps;
    const std::uint32_t block = BatchOptions{}.block_size;
    // The prompt, the untimed first step and the timed ones; every sequence in whole blocks.
    const std::uint32_t sequence_tokens = m + 1 + steps;
    // Every decoding row in one step, and prompt chunks of at most 128 rows as vkf-run's.
    const std::uint32_t chunk = std::max(b, std::min<std::uint32_t>(128, b * m));
    // Under a window a sequence holds at most its ring of blocks, whatever its length.
    std::uint32_t blocks_per_sequence = (sequence_tokens + block - 1) / block;
    if (shape.window != 0) {
        blocks_per_sequence = std::min(blocks_per_sequence, window_ring_blocks(shape.window, chunk, block));
    }
    const std::uint32_t pool = b * blocks_per_sequence * block;
    SuiteSettings budget = st;
    if (budget.max_memory == 0) {
        budget.max_memory = memory_budget(ctx, st) * 2 / 10 * 9;  // as the model suite's cases
    }
    check_memory(ctx, budget,
                 estimate_model_memory(config, shape.format,
                                       {.max_tokens = pool,
                                        .chunk = chunk,
                                        .kv_dtype = shape.kv_dtype,
                                        .kv_k_quant = shape.kv_k_quant,
                                        .kv_v_quant = shape.kv_v_quant,
                                        .window = shape.window})
                     .total(),
                 largest_tensor_bytes(config, shape.format));
    const bool gpu = ctx.limits().timestamps;
    const Model model(ctx, config, shape.format);
    // Distinct prompts: no prefix is shared, so the blocks in use are every sequence's own.
    Batch batch(model, BatchOptions{.max_tokens = pool,
                                    .max_sequence_tokens = sequence_tokens,
                                    .max_sequences = b,
                                    .block_size = block,
                                    .chunk = chunk,
                                    .kv_dtype = shape.kv_dtype,
                                    .kv_k_quant = shape.kv_k_quant,
                                    .kv_v_quant = shape.kv_v_quant,
                                    .window = shape.window,
                                    .share_prefixes = false});
    std::vector<SequenceId> ids;
    for (std::uint32_t s = 0; s < b; ++s) {
        ids.push_back(batch.add());
        batch.feed(ids.back(), token_ids(m, config.vocab_size, s), Logits::Last);
    }
    while (batch.has_pending()) {
        if (batch.step().ran.empty()) {
            throw Error(fmt::format("batch: a prefill step of {} sequences ran nothing", b));
        }
    }
    const auto decode_step = [&](std::uint32_t i) {
        for (std::uint32_t s = 0; s < b; ++s) {
            const std::uint32_t next[] = {(i * 31u + s * 17u + 5u) % config.vocab_size};
            batch.feed(ids[s], next, Logits::Last);
        }
        const StepResult step = batch.step();
        if (step.ran.size() != b || batch.has_pending()) {
            throw Error(fmt::format("batch: a decoding step ran {} of {} sequences", step.ran.size(), b));
        }
    };
    // One untimed step even without --warmup: it records the decoding list of this shape.
    decode_step(0);
    std::vector<double> times, host_ms;
    SessionStats before{};
    for (std::uint32_t i = 0; i < steps; ++i) {
        if (i == st.warmup) {
            before = batch.stats();
        }
        const SessionStats step_before = batch.stats();
        decode_step(i + 1);
        const SessionStats& now = batch.stats();
        if (i >= st.warmup) {
            times.push_back(gpu ? now.gpu_ms - step_before.gpu_ms : now.wall_ms - step_before.wall_ms);
            host_ms.push_back((now.wall_ms - step_before.wall_ms) - (now.gpu_ms - step_before.gpu_ms));
        }
    }
    const SessionStats& after = batch.stats();
    const double n = std::max<double>(1.0, st.reps);  // timed steps
    const std::uint64_t read = bytes_read_per_pass(config, shape.format, true);
    r.reps_ms = times;
    r.timing = timing_name(ctx);
    // Every sequence's token through the layers after m + 1 cached ones, and its LM-head row.
    r.flops = b * (layers_flops(config, m + 1, 1, shape.window) + 2ull * config.vocab_size * config.hidden);
    r.bytes = read;
    r.plan = fmt::format(
        "{} sequence(s) decoding together, one token of each per step: {} layer(s), {} weights, fp32 "
        "activations, {} paged KV cache in blocks of {}, {}",
        b, config.n_layer, to_string(shape.format), to_string(shape.kv_dtype), block,
        batch.fused_qkv() ? "fused QKV scatter, the step's list recorded once" : "QKV repacked by separate passes");
    const double median_ms = times.empty() ? 0.0 : stats_of(times).median;
    r.extra.emplace_back("batch", static_cast<double>(b));
    if (median_ms > 0.0) {
        r.extra.emplace_back("tokens_per_second", b / (median_ms / 1000.0));
        r.extra.emplace_back("per_sequence_tokens_per_second", 1.0 / (median_ms / 1000.0));
    }
    r.extra.emplace_back("bytes_read_per_token", static_cast<double>(read) / b);
    r.extra.emplace_back("kv_blocks_used", static_cast<double>(batch.blocks().used()));
    r.extra.emplace_back("kv_blocks_total", static_cast<double>(batch.blocks().total()));
    if (gpu && !host_ms.empty()) {
        r.extra.emplace_back("host_ms_per_step", stats_of(host_ms).median);
    }
    r.extra.emplace_back("dispatches_per_step", static_cast<double>(after.dispatches - before.dispatches) / n);
    r.extra.emplace_back("submissions_per_step", static_cast<double>(after.submissions - before.submissions) / n);
    r.extra.emplace_back("recordings_per_step", static_cast<double>(after.recordings - before.recordings) / n);
    r.extra.emplace_back("weight_bytes", static_cast<double>(weight_bytes(config, shape.format)));
    r.extra.emplace_back("bytes_read_per_pass", static_cast<double>(read));
}

}  // namespace

std::vector<BenchCase> batch_decode_cases(const SuiteSettings& s) {
    std::vector<BenchCase> cases;
    for (const std::string& weights_name : s.weights) {
        const WeightFormat format = *parse_weight_format(weights_name);
        for (const ModelPreset& preset : model_presets()) {
            if (std::find(s.presets.begin(), s.presets.end(), preset.name) == s.presets.end()) {
                continue;
            }
            for (const std::uint32_t prefill_m : s.prefill_m) {
                // As the model suite's other cases: --quick keeps whole-model prompts at 8 tokens.
                const std::uint32_t m = s.quick ? std::min<std::uint32_t>(prefill_m, 8) : prefill_m;
                for (const std::uint32_t b : s.batch) {
                    const BatchShape shape{preset.config, format,       s.kv_dtype,  b, m,
                                           s.window,      s.kv_k_quant, s.kv_v_quant};
                    BenchCase c;
                    c.name = fmt::format("{} decode batch {} after {} tokens {} kv {}", preset.name, b, m,
                                         to_string(format), s.kv_name);
                    if (s.window != 0) {
                        c.name += fmt::format(" window {}", s.window);
                    }
                    c.params = {{"model", preset.name},
                                {"mode", std::string("decode")},
                                {"weights", to_string(format)},
                                {"kv", s.kv_name},
                                {"layers", std::int64_t{preset.config.n_layer}},
                                {"batch", std::int64_t{b}},
                                {"tokens", std::int64_t{b}},
                                {"context", std::int64_t{m}},
                                {"step", std::string("batch")}};
                    if (s.window != 0) {
                        c.params.emplace_back("window", std::int64_t{s.window});
                    }
                    c.flops = b * layers_flops(preset.config, m, 1, s.window);
                    c.bytes = bytes_read_per_pass(preset.config, format, true);
                    c.run = [shape](CaseEnv& env, Result& r) { run_batch_case(shape, env, r); };
                    cases.push_back(std::move(c));
                }
            }
        }
    }
    return cases;
}

}  // namespace vkf::bench
