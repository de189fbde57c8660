#include "apps/run/prompt_batch.hpp"

#include "apps/common/app_main.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/run/report.hpp"
#include "base/error.hpp"
#include "host/model/batch_generation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace vkf::run_cli {

std::vector<Prompt> tokenize_prompts(const Options& o, const text::Tokenizer& tokenizer) {
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
    return {sequences, static_cast<std::uint32_t>(tokens), static_cast<std::uint32_t>(pool),
            std::max(o.chunk, sequences)};
}

BatchOptions prompt_batch_options(const Options& o, const Sizing& sizing, std::uint32_t window) {
    return with_run_flags(o, BatchOptions{.max_tokens = sizing.pool_tokens,
                                          .max_sequence_tokens = sizing.sequence_tokens,
                                          .max_sequences = sizing.sequences,
                                          .block_size = BatchOptions{}.block_size,
                                          .chunk = sizing.chunk,
                                          .window = window,
                                          .cache_prefixes = !o.no_prefix_cache && window == 0});
}

namespace {

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

PromptRuns run_prompts(BatchFront& front, const Options& o, const text::Tokenizer& tokenizer,
                       const std::vector<Prompt>& prompts, const Sizing& sizing,
                       const std::vector<std::uint32_t>& stop_ids) {
    PromptRuns runs;
    runs.outcomes.resize(prompts.size());
    BatchGenerator generator(front);
    std::map<SequenceId, std::size_t> index;
    std::uint64_t tokens_done = 0;
    const double tokens_expected = static_cast<double>(prompts.size()) * o.n_predict;
    app::ProgressLine progress(!o.quiet);
    std::size_t next = 0, finished = 0;
    const auto submit = [&] {
        const std::size_t i = next++;
        Outcome& r = runs.outcomes[i];
        r.text = std::make_unique<app::StreamedText>(tokenizer, o.stops, nullptr);
        SamplingParams sampling = o.sampling;
        sampling.seed += i;
        r.seed = sampling.seed;
        GenerationOptions gen{
            .n_predict = o.n_predict, .sampling = sampling, .keep_logits = o.check, .stop_ids = stop_ids};
        // Called after the step and before any sequence it ended is removed: the blocks in
        // use then are the step's peak.
        gen.on_token = [&, i](std::uint32_t k, std::uint32_t id) {
            Outcome& out = runs.outcomes[i];
            if (k == 0) {
                out.first_token = clock::now();
            }
            // Blocks only the prefix cache holds are free for the asking: not in use.
            const PrefixCache* cache = front.prefix_cache();
            runs.peak_blocks =
                std::max(runs.peak_blocks, front.blocks().used() - (cache != nullptr ? cache->reclaimable() : 0));
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
            Outcome& r = runs.outcomes.at(index.at(id));
            r.result = std::move(result);
            r.end = clock::now();
            r.text->finish();
            ++finished;
        }
    }
    runs.total = aggregate(runs.outcomes, start);
    return runs;
}

nlohmann::ordered_json results_json(const std::vector<Prompt>& prompts, const PromptRuns& runs) {
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        const Outcome& r = runs.outcomes[i];
        nlohmann::ordered_json one = {{"line", prompts[i].line},
                                      {"prompt", prompts[i].text},
                                      {"prompt_ids", prompts[i].ids},
                                      {"text", r.text->text()},
                                      {"generated_ids", r.result.tokens},
                                      {"cached_tokens", r.result.cached_tokens},
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
    return results;
}

nlohmann::ordered_json aggregate_json(const std::vector<Prompt>& prompts, const PromptRuns& runs,
                                      const KvBlocks& blocks, std::uint32_t block_size) {
    const Aggregate& total = runs.total;
    std::uint64_t prompt_tokens = 0, cached = 0;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        prompt_tokens += prompts[i].ids.size();
        cached += runs.outcomes[i].result.cached_tokens;
    }
    return {{"prompts", prompts.size()},
            {"prompt_tokens", prompt_tokens},
            {"cached_tokens", cached},
            {"generated_tokens", total.generated},
            {"decode_tokens", total.decoded},
            {"seconds", total.seconds},
            {"tokens_per_second", total.tokens_per_second()},
            {"decode_seconds", total.decode_seconds},
            {"decode_tokens_per_second", total.decode_tokens_per_second()},
            {"per_sequence_decode_tokens_per_second", total.per_sequence},
            {"kv_blocks_peak", runs.peak_blocks},
            {"kv_blocks_total", blocks.total()},
            {"kv_block_tokens", block_size}};
}

void print_prompt_runs(const Options& o, const std::vector<Prompt>& prompts, const Sizing& sizing,
                       const PromptRuns& runs, const KvBlocks& blocks, std::uint32_t block_size,
                       const std::function<void(std::size_t)>& after) {
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        const Outcome& r = runs.outcomes[i];
        fmt::print("--- line {}: {} prompt tokens, {} generated (stopped by {}), {:.2f} tokens/s\n", prompts[i].line,
                   prompts[i].ids.size(), r.result.tokens.size(), stop_reason_text(r.result.stop),
                   r.result.decode_tokens_per_second());
        fmt::print("{}{}\n", prompts[i].text, r.text->text());
        if (after) {
            after(i);
        }
        fmt::print("\n");
    }
    const Aggregate& total = runs.total;
    fmt::print("prompts: {} from {}, {} at once, {} tokens in {:.3f} s, {:.2f} tokens/s\n", prompts.size(),
               o.prompt_file, sizing.sequences, total.generated, total.seconds, total.tokens_per_second());
    fmt::print("decode:  {} tokens in {:.3f} s, {:.2f} tokens/s over the batch, {:.2f} tokens/s per sequence\n",
               total.decoded, total.decode_seconds, total.decode_tokens_per_second(), total.per_sequence);
    fmt::print("KV cache: {} of {} blocks of {} tokens in use at the peak\n", runs.peak_blocks, blocks.total(),
               block_size);
}

bool check_prompts(const Options& o, const Model& model, const std::vector<Prompt>& prompts, PromptRuns& runs,
                   std::uint32_t window) {
    bool failed = false;
    if (o.check) {
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            Outcome& r = runs.outcomes[i];
            r.check = check_logits(model, prompts[i].ids, r.result, window, o.quiet);
            failed = failed || !(r.check->max_rel <= o.check_tolerance);
        }
    }
    return failed;
}

nlohmann::ordered_json prompt_file_json(const Options& o, std::string_view device_key, nlohmann::ordered_json device,
                                        nlohmann::ordered_json model, const std::vector<Prompt>& prompts,
                                        const Sizing& sizing, const PromptRuns& runs,
                                        nlohmann::ordered_json aggregate) {
    nlohmann::ordered_json json = nlohmann::ordered_json::object();
    json[std::string(device_key)] = std::move(device);
    json["model"] = std::move(model);
    json["sampling"] = sampling_json(o.sampling);
    json["kv"] = o.kv.name();
    json["prompt_file"] = o.prompt_file;
    json["parallel"] = sizing.sequences;
    json["results"] = results_json(prompts, runs);
    json["aggregate"] = std::move(aggregate);
    return json;
}

void print_prompt_file(const Options& o, const std::vector<Prompt>& prompts, const Sizing& sizing,
                       const PromptRuns& runs, const KvBlocks& blocks, std::uint32_t block_size, const Model& model) {
    print_prompt_runs(o, prompts, sizing, runs, blocks, block_size, [&](std::size_t i) {
        const Outcome& r = runs.outcomes[i];
        if (r.check) {
            print_check(*r.check, r.result.tokens.size(), model, o.check_tolerance);
        }
    });
}

void print_prompts_check_failed(const Options& o) {
    fmt::print("check: FAILED, a prompt is above the tolerance {}\n", o.check_tolerance);
}

}  // namespace vkf::run_cli
