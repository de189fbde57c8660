#pragma once
// One sequence running through a Model: a Batch (host/model/batch.hpp) that holds a single
// sequence, with the forward() of a language-model session. Every chunk's forward pass, all
// layers and the logits, is one command list, recorded once per chunk size and submitted
// again for every later chunk of that size (every decoding step is the same one-token list).

#include "host/model/batch.hpp"
#include "host/model/sequence_model.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace vkf {

struct SessionOptions {
    std::uint32_t max_tokens = 0;  // KV-cache capacity: prompt plus generated tokens
    // Most tokens run through the layers per submission: bounds one submission's time (a
    // 128-token chunk of BLOOM-560m takes about two minutes on lavapipe).
    std::uint32_t chunk = 128;
    // GPUs: milliseconds one prompt submission should take at most (BatchOptions).
    std::uint32_t submission_target_ms = 500;
    bool profiling = false;  // time every dispatch (GPU timestamps) into profile()
    // The QKV projection writes Q, K and V where attention reads them (QkvScatter) where the
    // device and the family allow; off: Q and K/V are repacked by separate passes.
    bool fuse_qkv = true;
    // LayerNorms run inside the matmuls that read them where the matmul op says it pays
    // (docs/DESIGN.md "Batches and decoding steps").
    bool fuse_layernorm = true;
    // Re-submit recorded steps; false records every chunk anew, as a check.
    bool reuse_steps = true;
    // KV-cache storage, F16 or F32. F16 halves the cache's memory and the attention's reads
    // of it; Q and the attention output stay fp32 and all attention arithmetic is fp32.
    DType kv_dtype = DType::F16;
    // K and/or V quantized in the cache (q8_0: about 0.53x the bytes of f16, q4_0 0.28x; head
    // sizes of 32n), each as it is appended; kv_dtype (then F16) stores a side that is not.
    // Attention reads them dequantized (docs/QUANTIZATION.md, "KV cache").
    QuantFormat kv_k_quant = QuantFormat::None;
    QuantFormat kv_v_quant = QuantFormat::None;
    // Quantized weights: X rounded to int8 per block for the integer dot-product path.
    bool int8_activations = false;
    std::uint32_t block_size = 16;  // tokens per KV-cache block
    // Key window (BatchOptions::window; 0: full attention). With one, the cache holds the
    // blocks the window can still see, at most max_tokens (session_cache_tokens), and the
    // sequence goes on past max_tokens in constant memory.
    std::uint32_t window = 0;
};

// The Batch options of a session's single sequence; throws vkf::Error for max_tokens 0.
BatchOptions session_batch_options(const SessionOptions& options);

// The KV-cache tokens a session allocates: max_tokens, or with a window the ring it needs
// when that is less (window_ring_blocks).
std::uint32_t session_cache_tokens(std::uint32_t max_tokens, std::uint32_t window, std::uint32_t chunk,
                                   std::uint32_t block_size);

// The checks of the ids a session's forward() feeds at `position`, before anything is fed
// (Session's and BatchSession's, same words): throws vkf::Error for an empty input, ids >=
// `vocab_size`, or, without a window, more tokens than options.max_tokens holds.
void check_session_ids(std::span<const std::uint32_t> ids, std::uint32_t vocab_size, const SessionOptions& options,
                       std::uint32_t position);

class Session : public SequenceModel {
public:
    Session(const Model& model, SessionOptions options);
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Runs `ids` (appended to the sequence at position() onwards) through the model,
    // storing their keys and values in the cache, and returns the fp32 logits of the last
    // one ([vocab]), of every one ([ids.size(), vocab]), or none (the final norm and the
    // head are skipped: benchmarks of the layers alone). Throws vkf::Error for an empty
    // input, ids >= vocab_size, or a sequence over max_tokens. `on_chunk`, when given, is
    // called after each submission with how many of the ids have run (a long prompt's progress).
    using Logits = vkf::Logits;
    using ChunkProgress = vkf::ChunkProgress;
    std::vector<float> forward(std::span<const std::uint32_t> ids, Logits logits = Logits::Last,
                               const ChunkProgress& on_chunk = {}) override;

    // Records the steps a prompt of `prompt_tokens` tokens and the decoding after it take,
    // their pipelines made now, in parallel where the driver allows (Batch::prepare): what
    // precedes the first token is then the prompt's own work.
    PreparationStats prepare(std::uint32_t prompt_tokens);

    std::uint32_t position() const override { return batch_.position(sequence_); }
    std::uint32_t max_tokens() const override { return options_.max_tokens; }
    std::uint32_t window() const override { return options_.window; }
    // KV blocks the sequence holds (constant once a windowed sequence passes its ring).
    std::uint32_t blocks_held() const { return batch_.blocks_held(sequence_); }
    DType kv_dtype() const { return options_.kv_dtype; }
    void reset() override;
    // The key count after each submission since the last reset(): where the chunks the
    // tokens ran in ended (a reference run in the same chunks, reference::Model::forward,
    // gives the same numerics even under Jais' length-dependent ALiBi scaling).
    const std::vector<std::uint32_t>& chunk_ends() const override { return batch_.chunk_ends(sequence_); }
    const ModelConfig& config() const override { return batch_.model().config(); }
    const Profile& profile() const { return batch_.profile(); }
    std::uint64_t submissions() const { return batch_.stats().submissions; }
    const SessionStats& stats() const { return batch_.stats(); }
    // Whether this session's steps fuse QKV (SessionOptions::fuse_qkv and the device's limits).
    bool fused_qkv() const { return batch_.fused_qkv(); }
    // Device bytes of the KV cache and the activations.
    std::uint64_t device_bytes() const { return batch_.device_bytes(); }

private:
    SessionOptions options_;
    Batch batch_;
    SequenceId sequence_ = 0;
};

}  // namespace vkf
