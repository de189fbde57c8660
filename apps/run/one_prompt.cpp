// vkf-run --prompt / --prompt-ids: one prompt, one sequence of a BatchGenerator over the
// front of whichever topology runs it (apps/run/stages.hpp), printed the same on all.
#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/common/streamed_text.hpp"
#include "apps/common/text_source.hpp"
#include "apps/run/check.hpp"
#include "apps/run/grammar_option.hpp"
#include "apps/run/prompt_cache.hpp"
#include "apps/run/report.hpp"
#include "apps/run/stages.hpp"
#include "base/error.hpp"
#include "host/io/npy.hpp"
#include "host/model/batch_generation.hpp"
#include "host/quant/kv_quant.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

namespace vkf::run_cli {

std::int32_t run_prompt(RunStages& stages, const Options& o) {
    // The prompt first: the model is refused before loading when it and a session of this
    // many tokens cannot fit the device's memory.
    std::optional<text::Tokenizer> tokenizer;
    std::vector<std::uint32_t> prompt = o.prompt;
    if (o.prompt_text) {
        tokenizer = app::load_model_tokenizer(o.model, o.tokenizer);
        app::check_utf8(*o.prompt_text, "--prompt");
        prompt = tokenizer->encode(*o.prompt_text);
        if (prompt.empty()) {
            throw Error("--prompt: the text encodes to no tokens");
        }
    }
    // --ctx bounds the run's cache; a run that needs less gets less. Counted in 64 bits: a
    // 2-token prompt and --n-predict 4294967295 would wrap to 0 in 32.
    const std::uint64_t positions = std::min<std::uint64_t>(o.ctx, std::uint64_t{prompt.size()} + o.n_predict - 1);
    if (positions > ModelLimits::max_seq_len) {
        throw app::UsageError(fmt::format("--ctx {}: vkformer's sessions hold at most {} positions", positions,
                                          ModelLimits::max_seq_len));
    }
    const auto max_tokens = static_cast<std::uint32_t>(positions);
    const ModelConfig config = read_model_config(o.model);
    // Before the weights load: a bad grammar or schema is refused at once.
    std::shared_ptr<const grammar::Constraint> grammar =
        tokenizer ? run_grammar(o, *tokenizer, config.vocab_size) : nullptr;
    const std::uint32_t window = app::run_window(o.window, config);
    if (window == 0 && prompt.size() > max_tokens) {
        throw app::UsageError(
            fmt::format("a {}-token prompt does not fit the {}-token KV cache (--ctx {}; a "
                        "--window lets a run go past it)",
                        prompt.size(), max_tokens, o.ctx));
    }
    stages.load({.max_tokens = max_tokens,
                 .prompt_tokens = static_cast<std::uint32_t>(prompt.size()),
                 .window = window,
                 .chunk = o.chunk});
    stages.announce(o, "session");
    const Model& model = stages.first();

    GenerationOptions gen{.n_predict = o.n_predict,
                          .sampling = o.sampling,
                          .keep_logits = o.check || !o.logits_out.empty(),
                          .stop_ids = o.ignore_eos ? std::vector<std::uint32_t>{} : config.eos_token_ids,
                          .on_prefill = app::prefill_progress(!o.quiet),
                          .end_when_full = true};
    gen.grammar = std::move(grammar);
    // Text streams to stdout as it is made (collected only, for --json); ids get a progress line.
    std::optional<app::StreamedText> streamed;
    if (o.prompt_text) {
        stream_prompt_text(o, *tokenizer, streamed, gen);
    } else {
        auto line = std::make_shared<app::ProgressLine>(!o.quiet);
        gen.on_token = [line, n = o.n_predict](std::uint32_t i, std::uint32_t) {
            line->update(static_cast<double>(i + 1) / n, fmt::format("generating: {} of {} tokens", i + 1, n));
            return app::stop_signal() == 0;
        };
    }
    // One sequence of the front, kept to the end as a session keeps its own (no removal to
    // send to the ranks): the blocks in use after the run are the sequence's.
    BatchFront& front = stages.front().front();
    const SequenceId sequence = front.add();
    // --prompt-cache: the prefix the file holds is restored, not run (one device: stage 0's
    // Batch is the front's); the penalties still see it as the prompt's.
    std::optional<PromptCache> cache;
    std::span<const std::uint32_t> to_run = prompt;
    if (!o.prompt_cache.empty()) {
        cache = restore_prompt_cache(stages.front().stage(0), sequence, o.prompt_cache, o.model, prompt);
        to_run = std::span(prompt).subspan(cache->tokens);
        gen.penalty_context.assign(prompt.begin(), prompt.begin() + cache->tokens);
    }
    BatchGenerator generator(front);
    generator.resume(sequence, to_run, std::move(gen));
    const GenerationResult result = generator.run().at(sequence);
    if (cache) {
        save_prompt_cache(stages.front().stage(0), sequence, static_cast<std::uint32_t>(prompt.size()), *cache);
    }
    const std::uint32_t blocks_held = front.blocks().used();
    // Under mpirun: Ctrl-C (mpirun forwards SIGTERM to every rank) ended the generation at
    // this token, and the ranks are stopped as at the end; past ChannelOptions::signal_grace
    // the signal is this rank's failure.
    stages.finish();
    if (result.stop == StopReason::Error) {  // a grammar's (--grammar, --json-schema)
        throw Error(result.error);
    }
    if (streamed) {
        streamed->finish();
        if (!o.json) {
            fmt::print("\n\n");
        }
    }
    if (!o.logits_out.empty()) {
        // Written under a temporary name and renamed (host/util/files.hpp): never partial.
        const std::size_t shape[] = {result.tokens.size(), config.vocab_size};
        write_npy_f32(o.logits_out, shape, result.logits);
    }
    std::optional<CheckResult> check;
    if (o.check) {
        check = check_logits(model, prompt, result, window, o.quiet);  // stage 0 knows the checkpoint
    }
    const bool check_failed = check && !(check->max_rel <= o.check_tolerance);

    OneRun run = one_run(prompt, result, streamed, stages.prepared(), window, max_tokens);
    run.kv = o.kv.name();
    run.check = check ? &*check : nullptr;
    run.device_key = stages.device_key();
    run.device = stages.device_json();
    run.model = stages.model_json(o);
    run.blocks_held = blocks_held;
    stages.add_one_prompt_json(run);
    if (cache) {
        run.after_ctx["prompt_cache"] = prompt_cache_json(*cache);
    }
    // K and V of one token in every layer, quantized blocks' scales included (kv_token_bytes):
    // the first key after "kv".
    nlohmann::ordered_json after_kv = {
        {"kv_bytes_per_token",
         std::uint64_t{config.n_layer} *
             kv_token_bytes(o.kv.dense, o.kv.k_quant(), o.kv.v_quant(), config.n_kv_head, config.head_dim)}};
    after_kv.update(run.after_kv);
    run.after_kv = std::move(after_kv);
    if (o.json) {
        nlohmann::ordered_json json = one_run_json(o, run);
        stages.end_json(o, json);
        fmt::print("{}\n", json_text(json));
        return check_failed ? app::kExitCheckFailed : app::kExitOk;
    }
    const std::string cache_line = cache ? fmt::format("prompt cache: {} of the {} prompt tokens from {}, {} saved\n",
                                                       cache->tokens, prompt.size(), cache->file, cache->saved)
                                         : std::string();
    return print_one_run(o, run, model, stages.load_line(), stages.one_prompt_text(o) + cache_line);
}

}  // namespace vkf::run_cli
