#include "host/model/batch_generation.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace vkf {

BatchGenerator::~BatchGenerator() {
    for (const auto& [id, running] : running_) {
        if (batch_.contains(id)) {
            batch_.remove(id);
        }
    }
}

SequenceId BatchGenerator::submit(std::span<const std::uint32_t> prompt, GenerationOptions options) {
    if (prompt.empty()) {
        throw Error("generate: the prompt is empty; give at least one token id");
    }
    if (options.n_predict == 0) {
        throw Error("generate: n_predict must be at least 1");
    }
    const std::uint64_t needed = prompt.size() + std::uint64_t{options.n_predict} - 1;
    if (batch_.window() == 0 && needed > batch_.max_sequence_tokens()) {
        throw Error("generate: a " + fmt::to_string(prompt.size()) + "-token prompt and " +
                    fmt::to_string(options.n_predict) + " new tokens need " + fmt::to_string(needed) +
                    " tokens of KV cache; a sequence of this batch holds " +
                    fmt::to_string(batch_.max_sequence_tokens()));
    }
    Sampler sampler(options.sampling);
    const SequenceId id = batch_.add();
    try {
        batch_.feed(id, prompt, Logits::Last);
    } catch (...) {
        batch_.remove(id);
        throw;
    }
    Running r{.options = std::move(options),
              .sampler = sampler,
              .result = {.prompt_tokens = static_cast<std::uint32_t>(prompt.size())},
              .start = clock::now()};
    running_.emplace(id, std::move(r));
    return id;
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
    batch_.remove(id);
    ended_.emplace_back(id, std::move(r.result));
    running_.erase(it);
}

void BatchGenerator::cancel(SequenceId id) {
    if (!running_.contains(id)) {
        throw Error("generate: no running generation " + fmt::to_string(id));
    }
    finish(id, StopReason::Caller);
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
            if (!out.done) {
                continue;  // a prompt chunk: more of the prompt to run
            }
            Running& r = running_.at(out.id);
            const std::uint32_t token = r.sampler.sample(out.logits);
            const auto index = static_cast<std::uint32_t>(r.result.tokens.size());
            r.result.tokens.push_back(token);
            if (r.options.keep_logits) {
                r.result.logits.insert(r.result.logits.end(), out.logits.begin(), out.logits.end());
            }
            if (index == 0) {
                r.first_token = clock::now();
                r.result.prefill_time = r.first_token - r.start;
            }
            const bool go_on = !r.options.on_token || r.options.on_token(index, token);
            const auto& stops = r.options.stop_ids;
            if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
                finish(out.id, StopReason::StopToken);
            } else if (!go_on) {
                finish(out.id, StopReason::Caller);
            } else if (index + 1 == r.options.n_predict) {
                finish(out.id, StopReason::Length);
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
