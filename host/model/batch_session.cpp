#include "host/model/batch_session.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace vkf {

BatchSession::BatchSession(BatchFront& front, const ModelConfig& config, const SessionOptions& options)
    : front_(front), config_(config), options_(options), sequence_(front.add()) {}

void BatchSession::reset() {
    front_.remove(sequence_);
    sequence_ = front_.add();
    position_ = 0;
}

std::vector<float> BatchSession::forward(std::span<const std::uint32_t> ids, Logits which,
                                         const ChunkProgress& on_chunk) {
    const std::uint32_t vocab = config_.vocab_size;
    // Session::forward's checks and words, before anything is fed.
    check_session_ids(ids, vocab, options_, position_);
    front_.feed(sequence_, ids, which);
    std::vector<float> logits;
    logits.reserve(which == Logits::All ? ids.size() * vocab : which == Logits::Last ? vocab : 0);
    std::size_t done = 0;  // of the ids, those whose step's output came back
    while (done < ids.size()) {
        const std::uint64_t started = front_.pipeline().steps;
        StepResult step = front_.step();
        // A pipelined front returns nothing only while it started a step (its steps count
        // on); nothing returned and nothing started: the sequence cannot run. One sequence
        // holding the whole pool always finds room: this is a bug, not input.
        if (step.ran.empty() && front_.pipeline().steps == started) {
            throw Error("session: the step ran nothing with " + fmt::to_string(ids.size() - done) + " tokens pending");
        }
        for (const SequenceOutput& out : step.ran) {
            if (out.id != sequence_) {
                throw Error("session: the step ran sequence " + fmt::to_string(out.id) + ", not this session's " +
                            fmt::to_string(sequence_));
            }
            logits.insert(logits.end(), out.logits.begin(), out.logits.end());
            done += out.tokens;
            position_ = out.position;
            if (on_chunk) {
                on_chunk(std::min(done, ids.size()), ids.size());
            }
        }
    }
    const std::size_t expected = which == Logits::All ? ids.size() * vocab : which == Logits::Last ? vocab : 0;
    if (done != ids.size() || logits.size() != expected) {
        throw Error("session: the steps ran " + fmt::to_string(done) + " of " + fmt::to_string(ids.size()) +
                    " tokens and returned " + fmt::to_string(logits.size()) + " logits; " + fmt::to_string(expected) +
                    " expected");
    }
    return logits;
}

}  // namespace vkf
