#include "host/model/session.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

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
                        .kv_k_quant = o.kv_k_quant,
                        .kv_v_quant = o.kv_v_quant,
                        .int8_activations = o.int8_activations,
                        .window = o.window,
                        .share_prefixes = false,
                        .cache_prefixes = o.cache_prefixes};
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
            throw Error(fmt::format("session: token id {} at input position {} is not below the vocabulary size {}",
                                    ids[i], i, vocab_size));
        }
    }
    if (options.window == 0 && ids.size() > options.max_tokens - position) {
        throw Error(fmt::format("session: {} more tokens after {} exceed the KV cache's {} tokens", ids.size(),
                                position, options.max_tokens));
    }
}

Session::Session(const Model& model, SessionOptions options)
    : SessionBatch(model, options), BatchSession(batch_, model.config(), options) {}

SequenceState Session::save_state(std::uint32_t tokenizer_crc) {
    return batch_.save_state(sequence(), tokenizer_crc);
}

StateFingerprint Session::state_fingerprint(std::uint32_t tokenizer_crc) const {
    return batch_.state_fingerprint(tokenizer_crc);
}

std::uint64_t Session::state_size() const {
    if (window() != 0 || position() == 0) {
        throw Error(window() != 0 ? "sequence state: a session with a key window has no state to save"
                                  : "sequence state: the session holds no tokens: there is nothing to save");
    }
    return serialized_state_size(state_fingerprint(0), position(), chunk_ends().size());
}

void Session::load_state(const SequenceState& state) {
    if (window() != 0) {
        throw Error(
            fmt::format("sequence state: this session has a key window of {} tokens; states are loaded "
                        "into sessions without one",
                        window()));
    }
    if (state.tokens.size() > max_tokens()) {
        throw Error(fmt::format("sequence state: {} tokens, over this session's KV cache of {}", state.tokens.size(),
                                max_tokens()));
    }
    refill([&](SequenceId id) {
        batch_.restore_state(id, state);
        return static_cast<std::uint32_t>(state.tokens.size());
    });
}

PreparationStats Session::prepare(std::uint32_t prompt_tokens) {
    return batch_.prepare(batch_.sequence_shapes(prompt_tokens));
}

}  // namespace vkf
