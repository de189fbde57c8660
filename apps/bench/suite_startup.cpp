// The start-up suite: what a process pays before and around its first token, the cost that
// phone drivers (which compile every pipeline in the driver, often slowly) make visible.
// Per preset, two fresh Contexts on the run's device, one after the other, share an empty
// on-disk pipeline-cache folder:
//   cold  the folder is empty: every pipeline is compiled (as far as vkformer's cache goes;
//         a driver's own shader cache, such as Mesa's, is outside it: run with
//         MESA_SHADER_CACHE_DISABLE=true or an empty MESA_SHADER_CACHE_DIR for cold figures);
//   warm  the folder holds what the cold Context saved.
// Each loads the preset's synthetic weights, prepares the session's pipelines (Session::
// prepare: the prompt's and the decoding step's, in parallel, then run once), prefills a
// prompt (the logits of its last position on the host) and decodes a few tokens. Time to
// first token is load + prepare + first token; no token makes a pipeline (the result says
// so, and fails otherwise).

#include "apps/bench/suites.hpp"

#include "base/error.hpp"
#include "host/model/session.hpp"
#include "host/quant/quantized_checkpoint.hpp"

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <filesystem>

namespace vkf::bench {

namespace {

struct StartPass {
    double load_ms = 0;          // Context, weights upload
    double prepare_ms = 0;       // Session, Session::prepare
    double first_token_ms = 0;   // prefill, logits of the last position
    double second_token_ms = 0;  // the first decoding step: its pipelines are made in it
    double steady_token_ms = 0;  // median of the later decoding steps
    std::size_t pipelines_first_token = 0;
    std::size_t pipelines = 0;
    PreparationStats prepared;
    PipelineCacheStats cache;
};

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

constexpr std::uint32_t kDecodeSteps = 4;

StartPass start_once(const Context& outer, const std::filesystem::path& cache_dir, const ModelConfig& config,
                     WeightFormat format, DType kv_dtype, std::uint32_t prompt_tokens) {
    StartPass p;
    const auto t0 = std::chrono::steady_clock::now();
    Context ctx(ContextOptions{.validation = outer.validation_enabled(),
                               .device = fmt::to_string(outer.device_info().index),
                               .limits = outer.overrides(),
                               .pipeline_cache_dir = cache_dir});
    const Model model(ctx, config, format);
    p.load_ms = ms_since(t0);

    const std::uint32_t chunk = std::min<std::uint32_t>(prompt_tokens, 128);
    std::vector<std::uint32_t> prompt(prompt_tokens);
    for (std::uint32_t i = 0; i < prompt_tokens; ++i) {
        prompt[i] = (i * 7919u + 13u) % config.vocab_size;
    }
    const auto t1 = std::chrono::steady_clock::now();
    Session session(
        model, SessionOptions{.max_tokens = prompt_tokens + 1 + kDecodeSteps, .chunk = chunk, .kv_dtype = kv_dtype});
    p.prepared = session.prepare(prompt_tokens);
    p.prepare_ms = ms_since(t1);
    const std::size_t prepared = ctx.pipeline_count();
    const auto t2 = std::chrono::steady_clock::now();
    session.forward(prompt, Session::Logits::Last);
    p.first_token_ms = ms_since(t2);
    p.pipelines_first_token = ctx.pipeline_count();
    if (p.pipelines_first_token != prepared) {
        throw Error(fmt::format("the first token made {} pipeline(s) Session::prepare missed",
                                p.pipelines_first_token - prepared));
    }

    std::vector<double> steady;
    for (std::uint32_t i = 0; i < kDecodeSteps; ++i) {
        const std::uint32_t next[] = {(i * 31u + 5u) % config.vocab_size};
        const auto t = std::chrono::steady_clock::now();
        session.forward(next, Session::Logits::Last);
        (i == 0 ? p.second_token_ms : steady.emplace_back()) = ms_since(t);
        if (i == 0) {
            p.pipelines = ctx.pipeline_count();
        } else if (ctx.pipeline_count() != p.pipelines) {
            throw Error(fmt::format("decoding step {} made {} new pipeline(s): pipelines must not be made per token",
                                    i + 1, ctx.pipeline_count() - p.pipelines));
        }
    }
    p.steady_token_ms = stats_of(steady).median;
    ctx.save_pipeline_cache();
    p.cache = ctx.pipeline_cache_stats();
    return p;
}

}  // namespace

std::vector<BenchCase> startup_cases(const Context&, const SuiteSettings& s) {
    std::vector<BenchCase> cases;
    const WeightFormat format = *parse_weight_format(s.weights.front());
    for (const ModelPreset& preset : model_presets()) {
        if (std::find(s.presets.begin(), s.presets.end(), preset.name) == s.presets.end()) {
            continue;
        }
        // A short prompt: the point is what precedes its first token, not the prefill's rate.
        const std::uint32_t m = std::min<std::uint32_t>(s.prefill_m.empty() ? 8 : s.prefill_m.front(), 8);
        BenchCase c;
        c.name =
            fmt::format("{} start-up {} prompt {} kv {}", preset.name, to_string(format), m, to_string(s.kv_dtype));
        c.params = {{"model", preset.name},
                    {"weights", to_string(format)},
                    {"kv", std::string(to_string(s.kv_dtype))},
                    {"tokens", std::int64_t{m}}};
        const ModelConfig config = preset.config;
        const DType kv_dtype = s.kv_dtype;
        c.run = [config, format, kv_dtype, m](CaseEnv& env, Result& r) {
            std::uint64_t largest = 0;
            for (const ExpectedTensor& t : expected_tensors(config)) {
                largest = std::max(largest, tensor_bytes(t, format));
            }
            SuiteSettings budget = env.settings;
            if (budget.max_memory == 0) {
                budget.max_memory = memory_budget(env.ctx, env.settings) * 2 / 10 * 9;
            }
            check_memory(env.ctx, budget,
                         estimate_model_memory(config, format,
                                               {.max_tokens = m + 1 + kDecodeSteps, .chunk = m, .kv_dtype = kv_dtype})
                             .total(),
                         largest);
            const std::filesystem::path dir =
                std::filesystem::temp_directory_path() / fmt::format("vkf-bench-startup-{}", ::getpid());
            std::filesystem::remove_all(dir);
            std::filesystem::create_directories(dir);
            StartPass cold, warm;
            try {
                cold = start_once(env.ctx, dir, config, format, kv_dtype, m);
                warm = start_once(env.ctx, dir, config, format, kv_dtype, m);
            } catch (...) {
                std::filesystem::remove_all(dir);
                throw;
            }
            std::filesystem::remove_all(dir);

            r.timing = "host_wall_clock";
            // After loading: what a user waits for between the model line and the first token.
            r.reps_ms = {cold.prepare_ms + cold.first_token_ms};
            const std::pair<const char*, double> figures[] = {
                {"pipelines", static_cast<double>(cold.pipelines)},
                {"pipelines_at_first_token", static_cast<double>(cold.pipelines_first_token)},
                {"create_ms_cold", cold.cache.create_ms},
                {"create_ms_warm", warm.cache.create_ms},
                {"cache_hits_warm", static_cast<double>(warm.cache.cache_hits)},
                {"cache_bytes", static_cast<double>(warm.cache.loaded_bytes)},
                {"load_ms_cold", cold.load_ms},
                {"prepare_ms_cold", cold.prepare_ms},
                {"prepare_ms_warm", warm.prepare_ms},
                {"prepare_threads", static_cast<double>(cold.prepared.threads)},
                {"first_token_ms_cold", cold.first_token_ms},
                {"first_token_ms_warm", warm.first_token_ms},
                {"second_token_ms_cold", cold.second_token_ms},
                {"second_token_ms_warm", warm.second_token_ms},
                {"token_ms_steady", warm.steady_token_ms},
            };
            for (const auto& [name, value] : figures) {
                r.extra.emplace_back(name, value);
            }
            r.plan = fmt::format(
                "{} pipelines ({} by the first token), created in {} ms cold, {} ms from the disk cache ({}); "
                "prepared in {} ms cold, {} ms warm on {} threads; first token {} ms cold, {} ms warm; second {} / {} "
                "ms; then {} ms per token",
                cold.pipelines, cold.pipelines_first_token, fmt::format("{:.0f}", cold.cache.create_ms),
                fmt::format("{:.0f}", warm.cache.create_ms),
                warm.cache.hits_reported ? fmt::format("{} hits", warm.cache.cache_hits)
                                         : std::string("the driver reports no hits"),
                fmt::format("{:.0f}", cold.prepare_ms), fmt::format("{:.0f}", warm.prepare_ms), cold.prepared.threads,
                fmt::format("{:.0f}", cold.first_token_ms), fmt::format("{:.0f}", warm.first_token_ms),
                fmt::format("{:.0f}", cold.second_token_ms), fmt::format("{:.0f}", warm.second_token_ms),
                fmt::format("{:.1f}", warm.steady_token_ms));
        };
        cases.push_back(std::move(c));
    }
    return cases;
}

}  // namespace vkf::bench
