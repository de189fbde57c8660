// The prefix suite (vkf-bench run --suites prefix; issue 42): what the prefix cache saves on a
// conversation's next turn. For each preset and prompt length m, a Batch with the cache on
// (BatchOptions::cache_prefixes) runs a distinct m-token prompt to its first sampled row
// ("cold"), drops the sequence (its full blocks stay in the cache), then runs the same prompt
// plus one token ("warm"), which takes every whole cached block and computes only the rest.
// A case's times are the warm prompts' (GPU time of their steps, or host wall clock where the
// device has no timestamps); `extra` holds the cold median, warm / cold and the share of the
// warm prompt taken from the cache. One untimed cold and warm pair first records the step
// shapes, so no recording or shader compile is counted.

#include "apps/bench/model_work.hpp"
#include "apps/bench/suites.hpp"
#include "base/error.hpp"
#include "host/model/batch.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf::bench {

namespace {

struct PrefixShape {
    ModelConfig config;
    WeightFormat format;
    std::uint32_t context = 0;  // the cold prompt's tokens; the warm one has one more
};

// Runs `prompt` in a new sequence to its last row's logits; the milliseconds its steps took.
double time_prompt(Batch& batch, std::span<const std::uint32_t> prompt, bool gpu, std::uint32_t* cached) {
    const SessionStats before = batch.stats();
    const SequenceId id = batch.add();
    batch.feed(id, prompt, Logits::Last);
    if (cached != nullptr) {
        *cached = batch.shared_prefix(id);
    }
    while (batch.has_pending()) {
        if (batch.step().ran.empty()) {
            throw Error(fmt::format("prefix: a step of a {}-token prompt ran nothing", prompt.size()));
        }
    }
    batch.remove(id);
    const SessionStats& after = batch.stats();
    return gpu ? after.gpu_ms - before.gpu_ms : after.wall_ms - before.wall_ms;
}

void run_prefix_case(const PrefixShape& shape, CaseEnv& env, Result& r) {
    Context& ctx = env.ctx;
    const SuiteSettings& st = env.settings;
    const ModelConfig& config = shape.config;
    const std::uint32_t m = shape.context;
    const std::uint32_t block = BatchOptions{}.block_size;
    const std::uint32_t chunk = std::min<std::uint32_t>(128, m + 1);
    const std::uint32_t sequence_tokens = (m + 1 + block - 1) / block * block;
    // Room for one sequence and the cached blocks of one more.
    const std::uint32_t pool = 2 * sequence_tokens;
    check_memory(
        ctx, st,
        estimate_model_memory(config, shape.format, {.max_tokens = pool, .chunk = chunk, .kv_dtype = DType::F16})
            .total(),
        largest_tensor_bytes(config, shape.format));
    const bool gpu = ctx.limits().timestamps;
    const Model model(ctx, config, shape.format);
    Batch batch(model, BatchOptions{.max_tokens = pool,
                                    .max_sequence_tokens = sequence_tokens,
                                    .max_sequences = 1,
                                    .block_size = block,
                                    .chunk = chunk,
                                    .kv_dtype = DType::F16,
                                    .cache_prefixes = true});
    std::vector<double> cold, warm;
    std::uint32_t cached = 0;
    for (std::uint32_t i = 0; i < st.warmup + st.reps + 1; ++i) {
        // A new prompt each time: the cold run must find nothing in the cache.
        std::vector<std::uint32_t> prompt = token_ids(m + 1, config.vocab_size, 1000 + i);
        const double cold_ms = time_prompt(batch, std::span(prompt).first(m), gpu, nullptr);
        const double warm_ms = time_prompt(batch, prompt, gpu, &cached);
        if (i > st.warmup) {  // the first pair records the shapes; then --warmup untimed pairs
            cold.push_back(cold_ms);
            warm.push_back(warm_ms);
        }
    }
    const std::uint32_t expected = m / block * block;
    if (cached != expected) {
        throw Error(
            fmt::format("prefix: the warm prompt took {} tokens from the cache, expected {} (the {} "
                        "whole blocks of {} tokens)",
                        cached, expected, m / block, block));
    }
    r.reps_ms = warm;
    r.timing = timing_name(ctx);
    const std::uint32_t computed = m + 1 - cached;
    r.flops = layers_flops(config, cached, computed) + 2ull * config.vocab_size * config.hidden;
    r.bytes = bytes_read_per_pass(config, shape.format, true);
    r.plan = fmt::format(
        "a {}-token prompt cold, then with one more token after it ended: {} of {} tokens from the prefix "
        "cache, {} computed; {} layer(s), {} weights, f16 paged KV cache in blocks of {}",
        m, cached, m + 1, computed, config.n_layer, to_string(shape.format), block);
    const double cold_median = stats_of(cold).median, warm_median = stats_of(warm).median;
    r.extra.emplace_back("cold_ms", cold_median);
    r.extra.emplace_back("warm_over_cold", cold_median > 0.0 ? warm_median / cold_median : 0.0);
    r.extra.emplace_back("cached_tokens", static_cast<double>(cached));
    r.extra.emplace_back("cached_fraction", static_cast<double>(cached) / (m + 1));
}

}  // namespace

std::vector<BenchCase> prefix_cases(const Context& /*ctx*/, const SuiteSettings& s) {
    std::vector<BenchCase> cases;
    for (const std::string& weights_name : s.weights) {
        const WeightFormat format = *parse_weight_format(weights_name);
        for (const ModelPreset& preset : model_presets()) {
            if (std::find(s.presets.begin(), s.presets.end(), preset.name) == s.presets.end()) {
                continue;
            }
            for (const std::uint32_t m : s.prefill_m) {
                const PrefixShape shape{preset.config, format, m};
                BenchCase c;
                c.name = fmt::format("{} prefix hit after {} tokens {}", preset.name, m, to_string(format));
                c.params = {{"model", preset.name},         {"mode", std::string("prefill")},
                            {"weights", to_string(format)}, {"layers", std::int64_t{preset.config.n_layer}},
                            {"context", std::int64_t{m}},   {"step", std::string("prefix")}};
                c.flops = layers_flops(preset.config, 0, m + 1);
                c.bytes = bytes_read_per_pass(preset.config, format, true);
                c.run = [shape](CaseEnv& env, Result& r) { run_prefix_case(shape, env, r); };
                cases.push_back(std::move(c));
            }
        }
    }
    return cases;
}

}  // namespace vkf::bench
