#pragma once
// The device memory a model needs, estimated from its configuration before anything is
// uploaded: the weights in their WeightFormat (the tensors of expected_tensors, each as
// tensor_bytes counts it), and a Session's KV cache and activations for a number of tokens.
// Model's constructor checks it against the Context's memory budget and refuses a model
// that cannot fit; vkf-bench sizes its model cases with it.

#include "host/model/layer_range.hpp"
#include "host/quant/quant_format.hpp"
#include "host/spec/model_config.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace vkf {

// The sessions a model is loaded for (SessionOptions' fields that size its buffers).
// max_tokens 0: none, the weights alone.
struct SessionSize {
    std::uint32_t max_tokens = 0;
    std::uint32_t chunk = 128;  // clamped to 1 .. max_tokens, as Session does
    DType kv_dtype = DType::F16;
    QuantFormat kv_k_quant = QuantFormat::None;  // SessionOptions::kv_k_quant, kv_v_quant
    QuantFormat kv_v_quant = QuantFormat::None;
    std::uint32_t block_size = 16;  // KV-cache tokens per block (SessionOptions::block_size)
    // Key window (SessionOptions::window): the cache is the ring it needs when less than
    // max_tokens (session_cache_tokens), not the whole context.
    std::uint32_t window = 0;
    // Several sequences in one Batch (vkf-server; batch_session_size in batch.hpp): its sequence
    // table holds max_sequences block tables of sequence_blocks blocks each; 0: one sequence
    // over the whole cache, as a Session's.
    std::uint32_t max_sequences = 1;
    std::uint32_t sequence_blocks = 0;
};

struct ModelMemoryEstimate {
    std::uint64_t weights = 0;      // every weight tensor in its WeightFormat
    std::uint64_t kv_cache = 0;     // K and V of every layer, max_tokens rows each
    std::uint64_t activations = 0;  // a chunk's fp32 activations, token ids and logits
    std::uint64_t total() const { return weights + kv_cache + activations; }
    // "1.71 MiB (1789520 bytes: weights 1.66 MiB, KV cache 6 KiB, activations 40.08 KiB)"
    std::string describe() const;
};

// Device bytes of the weights: the sum of tensor_bytes over expected_tensors(config), or over
// stage_tensors(config, layers) for one stage of a layer split.
std::uint64_t weight_bytes(const ModelConfig& config, WeightFormat format,
                           std::optional<LayerRange> layers = std::nullopt);

// Device bytes of one Session: the KV cache, and the fp32 activations, token ids and logits
// (every row of a chunk, as Logits::All needs) of a chunk; the QKV output buffer too, which a
// session that fuses QKV (SessionOptions::fuse_qkv) does without: an upper bound. The matmuls'
// split-K scratch and attention's split-KV partials are not counted: they depend on the
// device's plans, and they are split only where the output is too small to fill the device.
// A stage of a layer split (`layers`) holds the KV cache of its layers only, and logits only
// on the last stage.
ModelMemoryEstimate estimate_session_memory(const ModelConfig& config, const SessionSize& session,
                                            std::optional<LayerRange> layers = std::nullopt);

ModelMemoryEstimate estimate_model_memory(const ModelConfig& config, WeightFormat format,
                                          const SessionSize& session = {},
                                          std::optional<LayerRange> layers = std::nullopt);

// Throws vkf::Error naming both numbers when `estimate` is more than the Device buffers of
// `ctx` can still get (Context::memory_budget: device-local memory plus the host-visible
// memory they fall back to). `what` names the model in the message.
void check_model_fits(const Context& ctx, const ModelMemoryEstimate& estimate, const std::string& what);

}  // namespace vkf
