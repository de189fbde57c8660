#pragma once
// What a one-sequence session is made with (host/model/session.hpp, and a BatchSession's
// front, host/model/batch_session.hpp): its KV cache, chunks and the steps' options, and the
// Batch options of its single sequence.

#include "host/model/batch.hpp"

#include <cstdint>
#include <span>

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
    // The sequence's full blocks stay cached when reset() ends it, for a next prompt that
    // starts with the same tokens (BatchOptions::cache_prefixes; not with a window).
    bool cache_prefixes = false;
};

// The Batch options of a session's single sequence; throws vkf::Error for max_tokens 0.
BatchOptions session_batch_options(const SessionOptions& options);

// The KV-cache tokens a session allocates: max_tokens, or with a window the ring it needs
// when that is less (window_ring_blocks).
std::uint32_t session_cache_tokens(std::uint32_t max_tokens, std::uint32_t window, std::uint32_t chunk,
                                   std::uint32_t block_size);

// The checks of the ids a session's forward() feeds at `position`, before anything is fed
// (a BatchSession's): throws vkf::Error for an empty input, ids >=
// `vocab_size`, or, without a window, more tokens than options.max_tokens holds.
void check_session_ids(std::span<const std::uint32_t> ids, std::uint32_t vocab_size, const SessionOptions& options,
                       std::uint32_t position);

}  // namespace vkf
