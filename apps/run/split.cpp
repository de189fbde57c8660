#include "apps/run/split.hpp"

#include "apps/common/exit_codes.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/common/streamed_text.hpp"
#include "apps/common/text_source.hpp"
#include "apps/run/check.hpp"
#include "apps/run/report.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/npy.hpp"
#include "host/model/generation.hpp"
#include "host/model/split_model.hpp"
#include "host/model/split_session.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

namespace vkf::run_cli {

nlohmann::ordered_json devices_split_json(const SplitModel& split,
                                          const std::vector<std::unique_ptr<Context>>& contexts,
                                          const std::vector<std::uint64_t>& stage_bytes, const SplitStats& moved,
                                          const nlohmann::ordered_json& more, std::span<const double> busy_ms) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    nlohmann::ordered_json per_stage = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < split.stages().size(); ++i) {
        const Model& m = *split.stages()[i];
        layers.push_back({m.layers().begin, m.layers().end});
        per_stage.push_back({{"device", contexts[i]->device_info().name},
                             {"layers", {m.layers().begin, m.layers().end}},
                             {"weight_bytes", m.weights().bytes},
                             {"session_device_bytes", stage_bytes[i]}});
        if (!busy_ms.empty()) {
            per_stage.back()["busy_ms"] = busy_ms[i];
        }
    }
    nlohmann::ordered_json json = {{"mode", "devices"},
                                   {"stages", split.stages().size()},
                                   {"layers", layers},
                                   {"transfer_ms", moved.transfer_ms},
                                   {"transfer_bytes", moved.transfer_bytes},
                                   {"hand_offs", moved.hand_offs}};
    json.update(more);
    json["per_stage"] = per_stage;
    return json;
}

// One Context per --devices entry, each with --limits and --timeout; the same device named
// twice is opened twice.
std::vector<std::unique_ptr<Context>> open_devices(const Options& o) {
    std::vector<std::unique_ptr<Context>> contexts;
    for (const std::string& device : o.devices) {
        ContextOptions options = o.device.context_options();
        options.device = device;
        contexts.push_back(std::make_unique<Context>(options));
    }
    return contexts;
}

LoadedSplit load_split(const Options& o, const SessionSize& session) {
    LoadedSplit loaded{.contexts = open_devices(o)};
    std::vector<Context*> pointers;
    for (const auto& ctx : loaded.contexts) {
        pointers.push_back(ctx.get());
    }
    const auto start = std::chrono::steady_clock::now();
    ModelOptions options{.weights = o.weights, .check_finite_weights = !o.skip_weight_check, .session = session};
    auto line = std::make_shared<app::ProgressLine>(!o.quiet);
    options.progress = [line](const WeightUploadProgress& p) {
        const int percent = p.total_bytes ? static_cast<int>(100 * p.bytes_done / p.total_bytes) : 100;
        line->update(percent / 100.0,
                     fmt::format("loading a stage's weights: {}% of {}", percent, size_text(p.total_bytes)));
    };
    loaded.split = std::make_unique<SplitModel>(pointers, o.model, split_counts(o), options);
    loaded.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return loaded;
}

int run_split(const Options& o) {
    std::optional<text::Tokenizer> tokenizer;
    if (o.prompt_text) {
        tokenizer = app::load_model_tokenizer(o.model, o.tokenizer);
    }
    std::vector<std::uint32_t> prompt = o.prompt;
    if (o.prompt_text) {
        app::check_utf8(*o.prompt_text, "--prompt");
        prompt = tokenizer->encode(*o.prompt_text);
        if (prompt.empty()) {
            throw Error("--prompt: the text encodes to no tokens");
        }
    }
    const std::uint64_t positions = std::min<std::uint64_t>(o.ctx, std::uint64_t{prompt.size()} + o.n_predict - 1);
    if (positions > ModelLimits::max_seq_len) {
        throw app::UsageError(fmt::format("--ctx {}: vkformer's sessions hold at most {} positions", positions,
                                          ModelLimits::max_seq_len));
    }
    const auto max_tokens = static_cast<std::uint32_t>(positions);

    const LoadedSplit loaded =
        load_split(o, {.max_tokens = max_tokens, .chunk = o.chunk, .kv_dtype = o.kv, .window = o.window.value_or(0)});
    const std::vector<std::unique_ptr<Context>>& contexts = loaded.contexts;
    const SplitModel& split = *loaded.split;
    const double load_seconds = loaded.seconds;
    const ModelConfig& config = split.config();
    const Model& first = *split.stages().front();
    const std::uint32_t window = app::run_window(o.window, config);
    if (window == 0 && prompt.size() > max_tokens) {
        throw app::UsageError(fmt::format("a {}-token prompt does not fit the {}-token KV cache (--ctx {})",
                                          prompt.size(), max_tokens, o.ctx));
    }
    SplitSession session(split.stages(), session_options(o, max_tokens, o.chunk, window));
    const PreparationStats prepared = session.prepare(static_cast<std::uint32_t>(prompt.size()));
    std::uint64_t weight_bytes = 0;
    for (std::size_t i = 0; i < split.stages().size(); ++i) {
        const Model& m = *split.stages()[i];
        weight_bytes += m.weights().bytes;
        if (!o.quiet) {
            fmt::print(stderr, "stage {}: {}, {} weights ({}), {} KV cache and activations, on {}\n", i,
                       describe(m.layers(), config), size_text(m.weights().bytes), to_string(m.weight_format()),
                       size_text(session.stage(i).device_bytes()), contexts[i]->device_info().name);
        }
    }

    GenerationOptions gen{.n_predict = o.n_predict,
                          .sampling = o.sampling,
                          .keep_logits = o.check || !o.logits_out.empty(),
                          .stop_ids = o.ignore_eos ? std::vector<std::uint32_t>{} : config.eos_token_ids,
                          .on_prefill = app::prefill_progress(!o.quiet)};
    std::optional<app::StreamedText> streamed;
    if (o.prompt_text) {
        stream_prompt_text(o, *tokenizer, streamed, gen);
    } else {
        gen.on_token = [](std::uint32_t, std::uint32_t) { return app::stop_signal() == 0; };
    }
    const GenerationResult result = generate(session, prompt, gen);
    if (streamed) {
        streamed->finish();
        if (!o.json) {
            fmt::print("\n\n");
        }
    }
    if (!o.logits_out.empty()) {
        const std::size_t shape[] = {result.tokens.size(), config.vocab_size};
        write_npy_f32(o.logits_out, shape, result.logits);
    }
    std::optional<CheckResult> check;
    if (o.check) {
        check = check_logits(first, prompt, result, window, o.quiet);  // the first stage knows the checkpoint
    }
    const bool check_failed = check && !(check->max_rel <= o.check_tolerance);
    const SplitStats& moved = session.split_stats();
    OneRun run = one_run(prompt, result, streamed, prepared, window, max_tokens);
    run.kv = to_string(o.kv);
    run.check = check ? &*check : nullptr;
    run.device_key = "devices";
    run.device = devices_json(contexts);
    run.model = model_json(o, first, load_seconds);
    std::vector<std::uint64_t> stage_bytes;
    for (std::size_t i = 0; i < split.stages().size(); ++i) {
        stage_bytes.push_back(session.stage(i).device_bytes());
    }
    run.after_kv = {{"split", devices_split_json(split, contexts, stage_bytes, session.split_stats(),
                                                 nlohmann::ordered_json::object())}};
    if (o.json) {
        run.model["weight_bytes"] = weight_bytes;  // all stages': the tied embedding is held twice
        fmt::print("{}\n", json_text(one_run_json(o, run)));
        return check_failed ? app::kExitCheckFailed : app::kExitOk;
    }
    return print_one_run(o, run, first,
                         fmt::format("load:    {} of weights over {} stages in {:.3f} s", size_text(weight_bytes),
                                     contexts.size(), load_seconds),
                         fmt::format("split:   {} hand-offs of hidden rows, {} through host memory in {:.3f} s\n",
                                     moved.hand_offs, size_text(moved.transfer_bytes), moved.transfer_ms / 1000));
}

}  // namespace vkf::run_cli
