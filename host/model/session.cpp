#include "host/model/session.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace vkf {

BatchOptions session_batch_options(const SessionOptions& o) {
    if (o.max_tokens == 0) {
        throw Error("session: max_tokens must be at least 1");
    }
    const std::uint32_t tokens = session_cache_tokens(o.max_tokens, o.window, o.chunk, o.block_size);
    return BatchOptions{.max_tokens = tokens,
                        .max_sequence_tokens = tokens,
                        .max_sequences = 1,
                        .block_size = o.block_size,
                        .chunk = o.chunk,
                        .submission_target_ms = o.submission_target_ms,
                        .profiling = o.profiling,
                        .fuse_qkv = o.fuse_qkv,
                        .fuse_layernorm = o.fuse_layernorm,
                        .reuse_steps = o.reuse_steps,
                        .kv_dtype = o.kv_dtype,
                        .int8_activations = o.int8_activations,
                        .window = o.window,
                        .share_prefixes = false};
}

std::uint32_t session_cache_tokens(std::uint32_t max_tokens, std::uint32_t window, std::uint32_t chunk,
                                   std::uint32_t block_size) {
    if (window == 0 || block_size == 0) {
        return max_tokens;
    }
    const std::uint64_t ring =
        std::uint64_t{window_ring_blocks(window, std::clamp<std::uint32_t>(chunk, 1, max_tokens), block_size)} *
        block_size;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(max_tokens, ring));
}

void check_session_ids(std::span<const std::uint32_t> ids, std::uint32_t vocab_size, const SessionOptions& options,
                       std::uint32_t position) {
    if (ids.empty()) {
        throw Error("session: forward needs at least one token id");
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= vocab_size) {
            throw Error("session: token id " + fmt::to_string(ids[i]) + " at input position " + fmt::to_string(i) +
                        " is not below the vocabulary size " + fmt::to_string(vocab_size));
        }
    }
    if (options.window == 0 && ids.size() > options.max_tokens - position) {
        throw Error("session: " + fmt::to_string(ids.size()) + " more tokens after " + fmt::to_string(position) +
                    " exceed the KV cache's " + fmt::to_string(options.max_tokens) + " tokens");
    }
}

Session::Session(const Model& model, SessionOptions options)
    : options_(options), batch_(model, session_batch_options(options)), sequence_(batch_.add()) {}

PreparationStats Session::prepare(std::uint32_t prompt_tokens) {
    return batch_.prepare(batch_.sequence_shapes(prompt_tokens));
}

void Session::reset() {
    batch_.remove(sequence_);
    sequence_ = batch_.add();
}

std::vector<float> Session::forward(std::span<const std::uint32_t> ids, Logits which, const ChunkProgress& on_chunk) {
    const std::uint32_t vocab = batch_.model().config().vocab_size;
    check_session_ids(ids, vocab, options_, position());
    batch_.feed(sequence_, ids, which);
    std::vector<float> logits;
    logits.reserve(which == Logits::All ? ids.size() * vocab : which == Logits::Last ? vocab : 0);
    while (batch_.pending(sequence_) > 0) {
        StepResult step = batch_.step();
        if (step.ran.empty()) {
            // One sequence holding the whole pool always finds room; this is a bug, not input.
            throw Error("session: the step ran nothing with " + fmt::to_string(batch_.pending(sequence_)) +
                        " tokens pending");
        }
        const std::vector<float>& rows = step.ran.front().logits;
        logits.insert(logits.end(), rows.begin(), rows.end());
        if (on_chunk) {
            on_chunk(ids.size() - batch_.pending(sequence_), ids.size());
        }
    }
    return logits;
}

}  // namespace vkf
