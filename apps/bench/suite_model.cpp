// The block and model suites: one transformer block, and whole models, of the presets'
// shapes with synthetic weights (host/model/model.hpp), run through Session exactly as vkf-run
// runs a checkpoint. A case's time is the GPU time of its forward passes (the session's
// timestamps), or the host wall clock where the device has no timestamps.
// The sessions' KV cache is SuiteSettings::kv_dtype (vkf-bench run --kv), and each of
// SuiteSettings::kv_also (--kv-also) timed right after it, part of each case's name and params.
//   block  one layer (a 16-token vocabulary, so that embedding and head cost nothing):
//          a prefill of m tokens, and one decoding step with m tokens in the KV cache.
//   model  every layer, the embedding and the LM head: prefill of m tokens (logits of the
//          last) and decoding with m tokens in the cache (--quick: at most 8); tokens/s
//          in `extra`.
// Both run in every --weights format (f32, f16, q8_0, q4_0). A case's bytes are the weight
// bytes one forward pass reads (every layer's matrices, norms and biases, and the LM head),
// so its bandwidth fraction says how close decoding is to the memory roofline.

#include "apps/bench/suites.hpp"

#include "apps/bench/model_work.hpp"

#include "host/model/session.hpp"
#include "host/quant/quantized_checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

namespace vkf::bench {

std::vector<ModelPreset> model_presets() {
    return {{"bloom-560m", ModelConfig{.family = ModelFamily::Bloom,
                                       .vocab_size = 250880,
                                       .hidden = 1024,
                                       .n_layer = 24,
                                       .n_head = 16,
                                       .n_kv_head = 16,
                                       .head_dim = 64,
                                       .ffn_hidden = 4096}},
            // Deep and narrow: the host's share of a decoding step (recording, submission,
            // waiting) and the per-dispatch cost show, not the weights (2.4 MB).
            {"bloom-24x64", ModelConfig{.family = ModelFamily::Bloom,
                                        .vocab_size = 512,
                                        .hidden = 64,
                                        .n_layer = 24,
                                        .n_head = 2,
                                        .n_kv_head = 2,
                                        .head_dim = 32,
                                        .ffn_hidden = 256}},
            {"mpt-7b", ModelConfig{.family = ModelFamily::Mpt,
                                   .vocab_size = 50432,
                                   .hidden = 4096,
                                   .n_layer = 32,
                                   .n_head = 32,
                                   .n_kv_head = 32,
                                   .head_dim = 128,
                                   .ffn_hidden = 16384,
                                   .no_bias = true}}};
}

namespace {

// Milliseconds of one call of `step`: GPU time from the session's timestamps (two per
// submission, Session::stats()), else host time.
double timed(Session& session, bool gpu, const std::function<void()>& step) {
    const double gpu_before = session.stats().gpu_ms, wall_before = session.stats().wall_ms;
    step();
    return gpu ? session.stats().gpu_ms - gpu_before : session.stats().wall_ms - wall_before;
}

// The block and model cases of one preset: prefill of m tokens and a decoding step after m.
std::vector<BenchCase> forward_cases(const SuiteSettings& s, bool whole_model) {
    std::vector<BenchCase> cases;
    std::vector<KvStorage> storages{KvStorage{s.kv_dtype, s.kv_k_quant, s.kv_v_quant, s.kv_name}};
    storages.insert(storages.end(), s.kv_also.begin(), s.kv_also.end());
    const std::uint32_t window = s.window;
    for (const std::string& weights_name : s.weights) {
        const WeightFormat format = *parse_weight_format(weights_name);
        for (const ModelPreset& preset : model_presets()) {
            if (std::find(s.presets.begin(), s.presets.end(), preset.name) == s.presets.end()) {
                continue;
            }
            ModelConfig config = preset.config;
            if (!whole_model) {
                config.n_layer = 1;
                config.vocab_size = 16;
            }
            for (const std::uint32_t prefill_m : s.prefill_m) {
                // --quick: a whole BLOOM-560m prefill of 32 tokens takes half a minute on lavapipe.
                const std::uint32_t m = s.quick && whole_model ? std::min<std::uint32_t>(prefill_m, 8) : prefill_m;
                // Decoding also runs the way every step ran before recorded steps (unfused QKV,
                // the list recorded anew per token): the baseline of the same run.
                for (const auto& [decode, recorded] : {std::pair{false, true}, {true, true}, {true, false}}) {
                    for (const KvStorage& kv : storages) {
                        if (!(decode ? s.decode : s.prefill)) {
                            continue;
                        }
                        const DType kv_dtype = kv.dense;
                        const QuantFormat kv_k = kv.k, kv_v = kv.v;
                        const std::string kv_name = kv.name;
                        BenchCase c;
                        const std::string mode = decode ? "decode" : "prefill";
                        const std::string step_kind = recorded ? "recorded once" : "re-recorded";
                        c.name = fmt::format("{} {}{}{} tokens {} kv {}{}", preset.name, mode, decode ? " after " : " ",
                                             m, to_string(format), kv_name, recorded ? "" : " re-recorded unfused");
                        if (window != 0) {
                            c.name += fmt::format(" window {}", window);
                        }
                        c.params = {{"model", preset.name},
                                    {"mode", mode},
                                    {"weights", to_string(format)},
                                    {"kv", kv_name},
                                    {"layers", std::int64_t{config.n_layer}},
                                    {"tokens", std::int64_t{decode ? 1 : m}},
                                    {"context", std::int64_t{m}},
                                    {"step", step_kind}};
                        if (window != 0) {
                            c.params.emplace_back("window", std::int64_t{window});
                        }
                        const std::uint64_t weights = weight_bytes(config, format);
                        const std::uint64_t read = bytes_read_per_pass(config, format, whole_model);
                        c.flops = decode ? layers_flops(config, m, 1, window) : layers_flops(config, 0, m, window);
                        c.bytes = read;
                        c.run = [config, m, decode, recorded, format, kv_dtype, kv_k, kv_v, kv_name, weights, read,
                                 whole_model, window](CaseEnv& env, Result& r) {
                            Context& ctx = env.ctx;
                            const SuiteSettings& st = env.settings;
                            const std::uint32_t steps = st.warmup + st.reps;
                            const std::uint32_t max_tokens = decode ? m + 1 + steps : m;
                            const std::uint32_t chunk = std::min<std::uint32_t>(m, 128);
                            const std::uint64_t largest = largest_tensor_bytes(config, format);
                            // A model is the one thing a run holds: it may use most of the heap, where
                            // the kernel suites keep to half of it.
                            SuiteSettings budget = st;
                            if (budget.max_memory == 0) {
                                budget.max_memory = memory_budget(ctx, st) * 2 / 10 * 9;
                            }
                            check_memory(ctx, budget,
                                         estimate_model_memory(config, format,
                                                               {.max_tokens = max_tokens,
                                                                .chunk = chunk,
                                                                .kv_dtype = kv_dtype,
                                                                .kv_k_quant = kv_k,
                                                                .kv_v_quant = kv_v,
                                                                .window = window})
                                             .total(),
                                         largest);
                            const bool gpu = ctx.limits().timestamps;
                            const Model model(ctx, config, format);
                            Session session(model, SessionOptions{.max_tokens = max_tokens,
                                                                  .chunk = chunk,
                                                                  .fuse_qkv = recorded,
                                                                  .fuse_layernorm = recorded,
                                                                  .reuse_steps = recorded,
                                                                  .kv_dtype = kv_dtype,
                                                                  .kv_k_quant = kv_k,
                                                                  .kv_v_quant = kv_v,
                                                                  .window = window});
                            const Session::Logits logits = whole_model ? Session::Logits::Last : Session::Logits::None;
                            const std::vector<std::uint32_t> prompt = token_ids(m, config.vocab_size);
                            std::vector<double> times;
                            if (!decode) {
                                for (std::uint32_t i = 0; i < steps; ++i) {
                                    session.reset();
                                    const double ms = timed(session, gpu, [&] { session.forward(prompt, logits); });
                                    if (i >= st.warmup)
                                        times.push_back(ms);
                                }
                            } else {
                                session.forward(prompt, Session::Logits::None);
                                // One untimed step even without --warmup: it records the decoding
                                // list (pipelines made, descriptor sets written), as the prompt did
                                // for prefill, so the timed steps are the steady state.
                                const std::uint32_t first[] = {3u % config.vocab_size};
                                session.forward(first, logits);
                                SessionStats before{};
                                std::vector<double> host_ms;
                                for (std::uint32_t i = 0; i < steps; ++i) {
                                    if (i == st.warmup) {
                                        before = session.stats();
                                    }
                                    const std::uint32_t next[] = {(i * 31u + 5u) % config.vocab_size};
                                    const SessionStats step_before = session.stats();
                                    const double ms = timed(session, gpu, [&] { session.forward(next, logits); });
                                    if (i >= st.warmup) {
                                        times.push_back(ms);
                                        const SessionStats& now = session.stats();
                                        host_ms.push_back((now.wall_ms - step_before.wall_ms) -
                                                          (now.gpu_ms - step_before.gpu_ms));
                                    }
                                }
                                // Per decoding step: the host's time (wall clock of forward() minus the
                                // GPU's busy time, so recording, submission, waking up and the logits
                                // copy), and what the GPU was given.
                                const SessionStats& after = session.stats();
                                const double n =
                                    std::max<double>(1.0, static_cast<double>(after.tokens - before.tokens));
                                if (gpu && !host_ms.empty()) {
                                    r.extra.emplace_back("host_ms_per_token", stats_of(host_ms).median);
                                }
                                r.extra.emplace_back("dispatches_per_token",
                                                     static_cast<double>(after.dispatches - before.dispatches) / n);
                                r.extra.emplace_back("barriers_per_token",
                                                     static_cast<double>(after.barriers - before.barriers) / n);
                                r.extra.emplace_back("submissions_per_token",
                                                     static_cast<double>(after.submissions - before.submissions) / n);
                                r.extra.emplace_back("recordings_per_token",
                                                     static_cast<double>(after.recordings - before.recordings) / n);
                            }
                            r.reps_ms = times;
                            r.timing = timing_name(ctx);
                            r.flops = decode ? layers_flops(config, m, 1, window) : layers_flops(config, 0, m, window);
                            r.bytes = read;
                            r.extra.emplace_back("weight_bytes", static_cast<double>(weights));
                            // The KV cache and activations: constant in the context under a window.
                            r.extra.emplace_back("session_device_bytes", static_cast<double>(session.device_bytes()));
                            r.extra.emplace_back("bytes_read_per_pass", static_cast<double>(read));
                            if (whole_model) {
                                // The LM head's arithmetic, on the one row whose logits are wanted.
                                r.flops += 2ull * config.vocab_size * config.hidden;
                            }
                            r.plan = fmt::format(
                                "{} layer(s), {} weights, fp32 activations, {} KV cache, prompt chunks of {}, one "
                                "submission per chunk, {}",
                                config.n_layer, to_string(format), kv_name, chunk,
                                session.fused_qkv() ? "fused QKV scatter, lists recorded once per chunk size"
                                                    : "QKV repacked by separate passes, a list recorded per chunk");
                            // The same median the runner reports for the result.
                            const double median_ms = times.empty() ? 0.0 : stats_of(times).median;
                            if (median_ms > 0.0) {
                                r.extra.emplace_back("tokens_per_second", (decode ? 1.0 : m) / (median_ms / 1000.0));
                            }
                        };
                        cases.push_back(std::move(c));
                    }
                }
            }
        }
    }
    return cases;
}

}  // namespace

std::vector<BenchCase> block_cases(const Context&, const SuiteSettings& s) {
    return forward_cases(s, false);
}

std::vector<BenchCase> model_cases(const Context&, const SuiteSettings& s) {
    std::vector<BenchCase> cases = forward_cases(s, true);
    if (s.decode) {
        for (BenchCase& c : batch_decode_cases(s)) {
            cases.push_back(std::move(c));
        }
    }
    return cases;
}

}  // namespace vkf::bench
