#pragma once
// One sequence running through a Model on one device: a BatchSession (host/model/
// batch_session.hpp) over a Batch of its own that holds that single sequence. Every chunk's
// forward pass, all layers and the logits, is one command list, recorded once per chunk size
// and submitted again for every later chunk of that size (every decoding step is the same
// one-token list).

#include "host/model/batch.hpp"
#include "host/model/batch_session.hpp"
#include "host/model/sequence_state.hpp"
#include "host/model/session_options.hpp"

#include <cstdint>

namespace vkf {

namespace detail {
// The Batch a Session views, made before the BatchSession base that holds a reference to it.
struct SessionBatch {
    SessionBatch(const Model& model, const SessionOptions& options) : batch_(model, session_batch_options(options)) {}
    Batch batch_;
};
}  // namespace detail

class Session : private detail::SessionBatch, public BatchSession {
public:
    Session(const Model& model, SessionOptions options);
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Records the steps a prompt of `prompt_tokens` tokens and the decoding after it take,
    // their pipelines made now, in parallel where the driver allows (Batch::prepare): what
    // precedes the first token is then the prompt's own work.
    PreparationStats prepare(std::uint32_t prompt_tokens);

    // The sequence's saved state (host/model/sequence_state.hpp), its fingerprint with
    // `tokenizer_crc`; state_size() is serialize_state's size of it. Throw vkf::Error for a
    // session that holds no tokens (or, state_size, a key window).
    SequenceState save_state(std::uint32_t tokenizer_crc);
    std::uint64_t state_size() const;
    // The fingerprint of this session's states (parse_state's `expected`).
    StateFingerprint state_fingerprint(std::uint32_t tokenizer_crc) const;
    // Replaces the sequence by a saved one (parsed against state_fingerprint()). Throws
    // vkf::Error, the session unchanged, for more tokens than max_tokens() or a key window; a
    // failure after that (the device) leaves it empty, as after reset().
    void load_state(const SequenceState& state);

    // KV blocks the sequence holds (constant once a windowed sequence passes its ring).
    std::uint32_t blocks_held() const { return batch_.blocks_held(sequence()); }
    DType kv_dtype() const { return batch_.options().kv_dtype; }
    const Profile& profile() const { return batch_.profile(); }
    std::uint64_t submissions() const { return batch_.stats().submissions; }
    const SessionStats& stats() const { return batch_.stats(); }
    // Whether this session's steps fuse QKV (SessionOptions::fuse_qkv and the device's limits).
    bool fused_qkv() const { return batch_.fused_qkv(); }
    // Device bytes of the KV cache and the activations.
    std::uint64_t device_bytes() const { return batch_.device_bytes(); }
};

}  // namespace vkf
