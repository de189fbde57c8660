#include "host/model/batch_session.hpp"

#include "base/error.hpp"
#include "host/model/batch_generation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace vkf {

BatchSession::BatchSession(BatchFront& front, const ModelConfig& config, const SessionOptions& options)
    : front_(front), config_(config), options_(options), sequence_(front.add()) {}

void BatchSession::reset() {
    front_.remove(sequence_);
    sequence_ = front_.add();
    position_ = 0;
}

void BatchSession::refill(const std::function<std::uint32_t(SequenceId)>& fill) {
    reset();
    try {
        position_ = fill(sequence_);
    } catch (...) {
        reset();
        throw;
    }
}

std::vector<float> BatchSession::forward(std::span<const std::uint32_t> ids, Logits which,
                                         const ChunkProgress& on_chunk) {
    const std::uint32_t vocab = config_.vocab_size;
    // Session::forward's checks and words, before anything is fed.
    check_session_ids(ids, vocab, options_, position_);
    front_.feed(sequence_, ids, which);
    std::vector<float> logits;
    logits.reserve(which == Logits::All || which == Logits::Every ? ids.size() * vocab
                   : which == Logits::Last                        ? vocab
                                                                  : 0);
    std::size_t done = 0;  // of the ids, those whose step's output came back
    while (done < ids.size()) {
        const std::uint64_t started = front_.pipeline().steps;
        StepResult step = front_.step();
        // A pipelined front returns nothing only while it started a step (its steps count
        // on); nothing returned and nothing started: the sequence cannot run. One sequence
        // holding the whole pool always finds room: this is a bug, not input.
        if (step.ran.empty() && front_.pipeline().steps == started) {
            throw Error(fmt::format("session: the step ran nothing with {} tokens pending", ids.size() - done));
        }
        for (const SequenceOutput& out : step.ran) {
            if (out.id != sequence_) {
                throw Error(fmt::format("session: the step ran sequence {}, not this session's {}", out.id, sequence_));
            }
            logits.insert(logits.end(), out.logits.begin(), out.logits.end());
            done += out.tokens;
            position_ = out.position;
            if (on_chunk) {
                on_chunk(std::min(done, ids.size()), ids.size());
            }
        }
    }
    const std::size_t expected = which == Logits::All || which == Logits::Every ? ids.size() * vocab
                                 : which == Logits::Last                        ? vocab
                                                                                : 0;
    if (done != ids.size() || logits.size() != expected) {
        throw Error(fmt::format("session: the steps ran {} of {} tokens and returned {} logits; {} expected", done,
                                ids.size(), logits.size(), expected));
    }
    return logits;
}

GenerationResult BatchSession::generate(std::span<const std::uint32_t> prompt, const GenerationOptions& options) {
    if (prompt.empty()) {
        throw Error("generate: the prompt is empty; give at least one token id");
    }
    if (options.n_predict == 0) {
        throw Error("generate: n_predict must be at least 1");
    }
    // The prompt must fit; generation then goes on until n_predict, a stop, or (without a key
    // window, whose ring of blocks never fills) the cache's capacity, which ends it with
    // StopReason::CacheFull.
    const std::uint64_t needed = std::uint64_t{position_} + prompt.size();
    if (options_.window == 0 && needed > options_.max_tokens) {
        throw Error(fmt::format(
            "generate: {} tokens already in the cache and a {}-token prompt need a KV cache of {} tokens; the "
            "session holds {}",
            position_, prompt.size(), needed, options_.max_tokens));
    }
    check_session_ids(prompt, config_.vocab_size, options_, position_);
    // position() while it generates (a callback may ask): the prompt and the tokens before
    // this one are in the cache.
    GenerationOptions live = options;
    const auto prompt_end = static_cast<std::uint32_t>(position_ + prompt.size());
    live.on_token = [this, prompt_end, inner = options.on_token](std::uint32_t index, std::uint32_t id) {
        position_ = prompt_end + index;
        return !inner || inner(index, id);
    };
    BatchGenerator generator(front_);
    generator.resume(sequence_, prompt, std::move(live));
    GenerationResult result = generator.run().at(sequence_);
    position_ = result.position;
    if (result.stop == StopReason::Error) {  // a grammar's (GenerationOptions::grammar)
        throw Error(result.error);
    }
    return result;
}

}  // namespace vkf
