#include "host/model/batch_generation.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace vkf {

BatchGenerator::~BatchGenerator() {
    for (const auto& [id, running] : running_) {
        if (running.owned && batch_.contains(id)) {
            batch_.remove(id);
        }
    }
}

Sampler BatchGenerator::check(std::span<const std::uint32_t> prompt, const GenerationOptions& options) const {
    if (prompt.empty()) {
        throw Error("generate: the prompt is empty; give at least one token id");
    }
    if (options.n_predict == 0) {
        throw Error("generate: n_predict must be at least 1");
    }
    const std::uint64_t needed = prompt.size() + std::uint64_t{options.n_predict} - 1;
    if (options.end_when_full && batch_.window() == 0 && prompt.size() > batch_.max_sequence_tokens()) {
        throw Error(fmt::format("generate: a {}-token prompt needs a KV cache of {} tokens; a sequence holds {}",
                                prompt.size(), prompt.size(), batch_.max_sequence_tokens()));
    }
    if (!options.end_when_full && batch_.window() == 0 && needed > batch_.max_sequence_tokens()) {
        throw Error(fmt::format(
            "generate: a {}-token prompt and {} new tokens need {} tokens of KV cache; a sequence of this batch "
            "holds {}",
            prompt.size(), options.n_predict, needed, batch_.max_sequence_tokens()));
    }
    Sampler sampler(options.sampling);
    sampler.accept(options.penalty_context);
    sampler.accept(prompt);  // the penalties count the prompt's tokens
    return sampler;
}

SequenceId BatchGenerator::submit(std::span<const std::uint32_t> prompt, GenerationOptions options) {
    const Sampler sampler = check(prompt, options);
    const SequenceId id = batch_.add(options.cache_salt);
    try {
        start(id, prompt, std::move(options), sampler, true);
    } catch (...) {
        batch_.remove(id);
        throw;
    }
    return id;
}

void BatchGenerator::resume(SequenceId id, std::span<const std::uint32_t> prompt, GenerationOptions options) {
    if (running_.contains(id) || !batch_.contains(id)) {
        throw Error(fmt::format("generate: sequence {} is not one of the front's idle sequences", id));
    }
    options.end_when_full = true;
    const Sampler sampler = check(prompt, options);
    start(id, prompt, std::move(options), sampler, false);
}

void BatchGenerator::start(SequenceId id, std::span<const std::uint32_t> prompt, GenerationOptions options,
                           const Sampler& sampler, bool owned) {
    // Only a sequence's first prompt takes blocks of others (a session's later turns follow its own).
    const bool fresh = batch_.chunk_ends(id).empty();
    batch_.feed(id, prompt, options.prompt_logprobs ? Logits::Every : Logits::Last);
    Running r{.options = std::move(options),
              .sampler = sampler,
              .result = {.prompt_tokens = static_cast<std::uint32_t>(prompt.size()),
                         .cached_tokens = fresh ? batch_.shared_prefix(id) : 0},
              .start = clock::now(),
              .owned = owned};
    if (r.options.prompt_logprobs) {
        r.prompt.assign(prompt.begin(), prompt.end());
    }
    if (r.options.grammar) {
        r.constraint.emplace(r.options.grammar);
    }
    running_.emplace(id, std::move(r));
}

void BatchGenerator::finish(SequenceId id, StopReason why) {
    auto it = running_.find(id);
    Running& r = it->second;
    r.result.stop = why;
    const clock::time_point now = clock::now();
    if (r.result.tokens.empty()) {
        r.result.prefill_time = now - r.start;
    } else {
        r.result.decode_time = now - r.first_token;
    }
    r.result.chunk_ends = batch_.chunk_ends(id);
    if (r.owned) {
        batch_.remove(id);
    }
    ended_.emplace_back(id, std::move(r.result));
    running_.erase(it);
}

void BatchGenerator::cancel(SequenceId id) {
    if (!running_.contains(id)) {
        throw Error(fmt::format("generate: no running generation {}", id));
    }
    finish(id, StopReason::Caller);
}

std::optional<std::vector<std::uint8_t>> BatchGenerator::grammar_mask(SequenceId id, Running& r, std::size_t vocab) {
    if (!r.constraint) {
        return std::vector<std::uint8_t>{};
    }
    try {
        std::vector<std::uint8_t> mask = r.constraint->mask(vocab, r.options.stop_ids);
        if (std::find(mask.begin(), mask.end(), std::uint8_t{1}) != mask.end()) {
            return mask;
        }
        if (r.constraint->complete()) {  // a whole sentence that nothing can continue: done
            finish(id, StopReason::StopToken);
            return std::nullopt;
        }
        r.result.error = "grammar: no token of the vocabulary continues the text in the grammar";
    } catch (const Error& e) {
        r.result.error = e.what();
    }
    finish(id, StopReason::Error);
    return std::nullopt;
}

// Each prompt row but the last predicts the next prompt token: its logprob, as for a
// generated one.
void BatchGenerator::record_prompt_logprobs(Running& r, const SequenceOutput& out) {
    if (out.tokens == 0 || out.logits.empty()) {
        return;
    }
    const std::size_t vocab = out.logits.size() / out.tokens;
    const std::uint32_t first = out.position - out.tokens;
    for (std::uint32_t row = 0; row < out.tokens; ++row) {
        const std::uint32_t next = first + row + 1;
        if (next < r.prompt.size()) {
            r.result.prompt_logprobs.push_back(token_logprobs(std::span(out.logits).subspan(row * vocab, vocab),
                                                              r.prompt[next], r.options.logprobs.value_or(0)));
        }
    }
}

std::vector<std::pair<SequenceId, GenerationResult>> BatchGenerator::step() {
    if (!running_.empty()) {
        const StepResult step = batch_.step();
        if (step.ran.empty() && !step.blocked.empty()) {
            // Every generation waits for a KV block that only another one could free: the
            // youngest ends with what it has, and its blocks go to the others.
            finish(*std::max_element(step.blocked.begin(), step.blocked.end()), StopReason::CacheFull);
        }
        for (const SequenceOutput& out : step.ran) {
            Running& r = running_.at(out.id);
            const bool in_prompt = r.result.tokens.empty();
            r.result.position = out.position;
            if (in_prompt && r.options.on_prefill) {
                r.prefilled = std::min(r.prefilled + out.tokens, r.result.prompt_tokens);
                r.options.on_prefill(r.prefilled, r.result.prompt_tokens);
            }
            if (r.options.prompt_logprobs && in_prompt) {
                record_prompt_logprobs(r, out);
            }
            if (!out.done) {
                continue;  // a prompt chunk: more of the prompt to run
            }
            // The last row's logits (a prompt run with every row's has them last).
            const std::size_t vocab =
                r.options.prompt_logprobs && in_prompt ? out.logits.size() / out.tokens : out.logits.size();
            const std::span<const float> logits = std::span(out.logits).last(vocab);
            const std::optional<std::vector<std::uint8_t>> mask = grammar_mask(out.id, r, logits.size());
            if (!mask) {
                continue;
            }
            const std::uint32_t token = r.sampler.sample(logits, *mask);
            const auto& stops = r.options.stop_ids;
            const bool stop = std::find(stops.begin(), stops.end(), token) != stops.end();
            if (r.constraint && !stop) {
                r.constraint->accept(token);  // allowed by the mask, so the walk goes on
            }
            const auto index = static_cast<std::uint32_t>(r.result.tokens.size());
            r.result.tokens.push_back(token);
            if (r.options.keep_logits) {
                r.result.logits.insert(r.result.logits.end(), logits.begin(), logits.end());
            }
            if (r.options.logprobs) {
                r.result.logprobs.push_back(token_logprobs(logits, token, *r.options.logprobs));
                if (r.options.on_logprobs) {
                    r.options.on_logprobs(index, r.result.logprobs.back());
                }
            }
            if (index == 0) {
                r.first_token = clock::now();
                r.result.prefill_time = r.first_token - r.start;
            }
            const bool go_on = !r.options.on_token || r.options.on_token(index, token);
            if (stop) {
                finish(out.id, StopReason::StopToken);
            } else if (!go_on) {
                finish(out.id, StopReason::Caller);
            } else if (index + 1 == r.options.n_predict) {
                finish(out.id, StopReason::Length);
            } else if (r.options.end_when_full && batch_.window() == 0 &&
                       out.position >= batch_.max_sequence_tokens()) {
                finish(out.id, StopReason::CacheFull);
            } else {
                const std::uint32_t next[] = {token};
                batch_.feed(out.id, next, Logits::Last);
            }
        }
    }
    return std::exchange(ended_, {});
}

std::map<SequenceId, GenerationResult> BatchGenerator::run() {
    std::map<SequenceId, GenerationResult> results;
    while (busy()) {
        for (auto& [id, result] : step()) {
            results.emplace(id, std::move(result));
        }
    }
    return results;
}

}  // namespace vkf
