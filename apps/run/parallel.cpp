#include "apps/run/parallel.hpp"

#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/common/streamed_text.hpp"
#include "apps/run/check.hpp"
#include "apps/run/load.hpp"
#include "apps/run/report.hpp"
#include "host/model/batch_generation.hpp"
#include "runtime/device_info_json.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vkf::run_cli {

namespace {

using clock = std::chrono::steady_clock;

struct Prompt {
    std::uint32_t line = 0;
    std::string text;
    std::vector<std::uint32_t> ids;
};

struct Outcome {
    std::unique_ptr<app::StreamedText> text;
    GenerationResult result;
    std::uint64_t seed = 0;
    std::optional<clock::time_point> first_token;
    clock::time_point end;
    std::optional<CheckResult> check;
};

std::vector<Prompt> tokenize(const Options& o, const text::Tokenizer& tokenizer) {
    std::vector<Prompt> prompts;
    for (const FilePrompt& p : o.file_prompts) {
        const auto where = [&] { return fmt::format("--prompt-file {} line {}", o.prompt_file, p.line); };
        Prompt prompt{.line = p.line, .text = p.text};
        try {
            prompt.ids = tokenizer.encode(p.text);
        } catch (const Error& e) {
            throw Error(where() + ": " + e.what());
        }
        if (prompt.ids.empty()) {
            throw Error(where() + ": the text encodes to no tokens");
        }
        prompts.push_back(std::move(prompt));
    }
    return prompts;
}

// How the batch is sized: every running sequence may hold the longest prompt and
// --n-predict tokens, in whole blocks, so no sequence ever waits for a block another holds.
struct Sizing {
    std::uint32_t sequences = 0;  // running at once
    std::uint32_t sequence_tokens = 0;
    std::uint32_t pool_tokens = 0;
};

Sizing size_batch(const Options& o, const std::vector<Prompt>& prompts, std::uint32_t block_size) {
    const auto longest = std::max_element(prompts.begin(), prompts.end(),
                                          [](const Prompt& a, const Prompt& b) { return a.ids.size() < b.ids.size(); });
    // In 64 bits: --n-predict 4294967295 would wrap in 32.
    const std::uint64_t tokens = std::uint64_t{longest->ids.size()} + o.n_predict - 1;
    if (tokens > ModelLimits::max_seq_len) {
        throw app::UsageError(fmt::format(
            "the longest prompt (line {}, {} tokens) and --n-predict {} need {} positions; vkformer's sequences "
            "hold at most {}",
            longest->line, longest->ids.size(), o.n_predict, tokens, ModelLimits::max_seq_len));
    }
    const std::uint32_t sequences = std::min<std::uint32_t>(o.parallel, static_cast<std::uint32_t>(prompts.size()));
    const std::uint64_t pool = sequences * ((tokens + block_size - 1) / block_size) * block_size;
    if (pool > std::numeric_limits<std::uint32_t>::max()) {
        throw app::UsageError(fmt::format("--parallel {} sequences of {} tokens need a {}-token KV cache; too many",
                                          sequences, tokens, pool));
    }
    return {sequences, static_cast<std::uint32_t>(tokens), static_cast<std::uint32_t>(pool)};
}

// The batch's figures over all prompts.
struct Aggregate {
    std::uint64_t generated = 0, decoded = 0;  // decoded: each prompt's tokens after its first
    double seconds = 0.0;                      // submitting the first prompt to the last one's end
    double decode_seconds = 0.0;               // the first token of any prompt to the last one's end
    double per_sequence = 0.0;                 // mean of the prompts' own decode tokens/s
    double decode_tokens_per_second() const { return decode_seconds > 0 ? decoded / decode_seconds : 0.0; }
    double tokens_per_second() const { return seconds > 0 ? generated / seconds : 0.0; }
};

Aggregate aggregate(const std::vector<Outcome>& outcomes, clock::time_point start) {
    Aggregate a;
    std::optional<clock::time_point> first;
    clock::time_point last = start;
    std::uint32_t rated = 0;
    for (const Outcome& r : outcomes) {
        const std::size_t n = r.result.tokens.size();
        a.generated += n;
        a.decoded += n > 0 ? n - 1 : 0;
        if (r.first_token) {
            first = first ? std::min(*first, *r.first_token) : *r.first_token;
        }
        last = std::max(last, r.end);
        if (n > 1) {
            a.per_sequence += r.result.decode_tokens_per_second();
            ++rated;
        }
    }
    a.seconds = std::chrono::duration<double>(last - start).count();
    a.decode_seconds = first ? std::chrono::duration<double>(last - *first).count() : 0.0;
    a.per_sequence = rated ? a.per_sequence / rated : 0.0;
    return a;
}

}  // namespace

int run_prompt_file(Context& ctx, const Options& o) {
    const text::Tokenizer tokenizer = app::load_model_tokenizer(o.model, o.tokenizer);
    const std::vector<Prompt> prompts = tokenize(o, tokenizer);
    const std::uint32_t block_size = BatchOptions{}.block_size;
    const Sizing sizing = size_batch(o, prompts, block_size);
    // Every decoding row of the running sequences fits one step: none waits a step for room.
    const std::uint32_t chunk = std::max(o.chunk, sizing.sequences);
    const LoadedModel loaded = load_model(ctx, o, {.max_tokens = sizing.pool_tokens, .chunk = chunk, .kv_dtype = o.kv});
    const Model& model = *loaded.model;
    const std::vector<std::uint32_t> stop_ids =
        o.ignore_eos ? std::vector<std::uint32_t>{} : model.config().eos_token_ids;
    const std::uint32_t window = app::run_window(o.window, model.config());

    Batch batch(model, BatchOptions{.max_tokens = sizing.pool_tokens,
                                    .max_sequence_tokens = sizing.sequence_tokens,
                                    .max_sequences = sizing.sequences,
                                    .block_size = block_size,
                                    .chunk = chunk,
                                    .profiling = o.profile,
                                    .fuse_qkv = !o.unfused,
                                    .fuse_layernorm = !o.unfused,
                                    .reuse_steps = !o.unfused,
                                    .kv_dtype = o.kv,
                                    .int8_activations = o.int8_activations,
                                    .window = window});
    print_model_line(ctx, model, o, batch.device_bytes(), fmt::format("{} sequences,", sizing.sequences).c_str());

    BatchGenerator generator(batch);
    std::vector<Outcome> outcomes(prompts.size());
    std::map<SequenceId, std::size_t> index;
    std::uint32_t peak_blocks = 0;
    std::uint64_t tokens_done = 0;
    const double tokens_expected = static_cast<double>(prompts.size()) * o.n_predict;
    app::ProgressLine progress(!o.quiet);
    std::size_t next = 0, finished = 0;
    const auto submit = [&] {
        const std::size_t i = next++;
        Outcome& r = outcomes[i];
        r.text = std::make_unique<app::StreamedText>(tokenizer, o.stops, nullptr);
        SamplingParams sampling = o.sampling;
        sampling.seed += i;
        r.seed = sampling.seed;
        GenerationOptions gen{
            .n_predict = o.n_predict, .sampling = sampling, .keep_logits = o.check, .stop_ids = stop_ids};
        // Called after the step and before any sequence it ended is removed: the blocks in
        // use then are the step's peak.
        gen.on_token = [&, i](std::uint32_t k, std::uint32_t id) {
            Outcome& out = outcomes[i];
            if (k == 0) {
                out.first_token = clock::now();
            }
            peak_blocks = std::max(peak_blocks, batch.blocks().used());
            ++tokens_done;
            progress.update(
                std::min(1.0, tokens_done / tokens_expected),
                fmt::format("generating: {} of {} prompts done, {} tokens", finished, prompts.size(), tokens_done));
            return out.text->push(id);
        };
        index.emplace(generator.submit(prompts[i].ids, std::move(gen)), i);
    };
    const clock::time_point start = clock::now();
    while (next < prompts.size() || generator.busy()) {
        while (next < prompts.size() && generator.running() < sizing.sequences) {
            submit();
        }
        for (auto& [id, result] : generator.step()) {
            Outcome& r = outcomes.at(index.at(id));
            r.result = std::move(result);
            r.end = clock::now();
            r.text->finish();
            ++finished;
        }
    }
    const Aggregate total = aggregate(outcomes, start);

    bool check_failed = false;
    if (o.check) {
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            outcomes[i].check = check_logits(model, prompts[i].ids, outcomes[i].result, window, o.quiet);
            check_failed = check_failed || !(outcomes[i].check->max_rel <= o.check_tolerance);
        }
    }
    const int status = check_failed ? app::kExitCheckFailed : app::kExitOk;

    if (o.json) {
        nlohmann::ordered_json results = nlohmann::ordered_json::array();
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            const Outcome& r = outcomes[i];
            nlohmann::ordered_json one = {{"line", prompts[i].line},
                                          {"prompt", prompts[i].text},
                                          {"prompt_ids", prompts[i].ids},
                                          {"text", r.text->text()},
                                          {"generated_ids", r.result.tokens},
                                          {"stop_reason", stop_reason_name(r.result.stop)},
                                          {"seed", r.seed},
                                          {"prefill_seconds", r.result.prefill_time.count()},
                                          {"decode_seconds", r.result.decode_time.count()},
                                          {"prefill_tokens_per_second", r.result.prefill_tokens_per_second()},
                                          {"decode_tokens_per_second", r.result.decode_tokens_per_second()}};
            if (r.check) {
                one["check"] = check_json(*r.check);
            }
            results.push_back(std::move(one));
        }
        const SessionStats& stats = batch.stats();
        nlohmann::ordered_json json = {
            {"device", ctx.device_info()},
            {"model", model_json(o, model, loaded.seconds)},
            {"sampling", sampling_json(o.sampling)},
            {"kv", to_string(o.kv)},
            {"prompt_file", o.prompt_file},
            {"parallel", sizing.sequences},
            {"results", std::move(results)},
            {"aggregate",
             {{"prompts", prompts.size()},
              {"generated_tokens", total.generated},
              {"decode_tokens", total.decoded},
              {"seconds", total.seconds},
              {"tokens_per_second", total.tokens_per_second()},
              {"decode_seconds", total.decode_seconds},
              {"decode_tokens_per_second", total.decode_tokens_per_second()},
              {"per_sequence_decode_tokens_per_second", total.per_sequence},
              {"kv_blocks_peak", peak_blocks},
              {"kv_blocks_total", batch.blocks().total()},
              {"kv_block_tokens", block_size},
              {"submissions", stats.submissions},
              {"gpu_seconds", stats.gpu_ms / 1000.0}}},
            {"batch_device_bytes", batch.device_bytes()},
        };
        add_memory_json(json, ctx);
        if (o.profile) {
            json["profile"] = profile_json(batch.profile());
        }
        fmt::print("{}\n", json_text(json));
        return status;
    }

    for (std::size_t i = 0; i < prompts.size(); ++i) {
        const Outcome& r = outcomes[i];
        fmt::print("--- line {}: {} prompt tokens, {} generated (stopped by {}), {:.2f} tokens/s\n", prompts[i].line,
                   prompts[i].ids.size(), r.result.tokens.size(), stop_reason_text(r.result.stop),
                   r.result.decode_tokens_per_second());
        fmt::print("{}{}\n", prompts[i].text, r.text->text());
        if (r.check) {
            print_check(*r.check, r.result.tokens.size(), model, o.check_tolerance);
        }
        fmt::print("\n");
    }
    fmt::print("prompts: {} from {}, {} at once, {} tokens in {:.3f} s, {:.2f} tokens/s\n", prompts.size(),
               o.prompt_file, sizing.sequences, total.generated, total.seconds, total.tokens_per_second());
    fmt::print("decode:  {} tokens in {:.3f} s, {:.2f} tokens/s over the batch, {:.2f} tokens/s per sequence\n",
               total.decoded, total.decode_seconds, total.decode_tokens_per_second(), total.per_sequence);
    fmt::print("KV cache: {} of {} blocks of {} tokens in use at the peak\n", peak_blocks, batch.blocks().total(),
               block_size);
    if (o.profile) {
        print_profile(batch.profile(), batch.stats().submissions);
    }
    if (check_failed) {
        fmt::print("check: FAILED, a prompt is above the tolerance {}\n", o.check_tolerance);
    }
    return status;
}

}  // namespace vkf::run_cli
