#pragma once
// A model checkpoint's weights on the device, one buffer per tensor (two per
// quantized matrix: values and scales), in one WeightFormat: fp32, fp16, or quantized
// matrices (each in its own format) with fp16 norms and biases. The tensors are named by what they do in a block, so
// the forward pass does not care which family they came from.

#include "host/io/safetensors.hpp"
#include "host/model/layer_range.hpp"
#include "host/quant/quant_format.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vkf {

// A weight matrix [out, in] (PyTorch's Linear.weight layout) and its bias [out], absent
// for MPT's no_bias.
struct LinearWeights {
    Buffer weight;  // quantized: the values plane
    Buffer scales;  // quantized: the fp16 scales; !valid() otherwise
    Buffer bias;    // !valid() when the layer has none
    std::uint32_t out = 0, in = 0;
    // The blocks `weight` holds; None for dense weights (ModelWeights::format.dense). Each
    // matrix has its own: a GGUF K-quant mix (Q4_K_M) stores matrices in several formats.
    QuantFormat quant = QuantFormat::None;
};

struct NormWeights {
    Buffer weight;
    Buffer bias;  // !valid() for MPT's no_bias
};

// One block's tensors by what they do (TensorSlot in host/spec/model_tensors.hpp names each
// family's tensor for each): e.g. BLOOM's attn_norm is input_layernorm, MPT's norm_1.
struct LayerWeights {
    NormWeights attn_norm;
    LinearWeights qkv;
    NormWeights q_norm, k_norm;  // MPT qk_ln only
    LinearWeights attn_out;
    NormWeights mlp_norm;
    LinearWeights gate;  // gated MLPs only (SwiGLU)
    LinearWeights up;
    LinearWeights down;
};

struct ModelWeights {
    // The model's format: its dense dtype, and the quantized format most of its matrices have
    // (the others' own is in LinearWeights::quant, embedding_quant and lm_head_quant).
    WeightFormat format;
    Buffer embedding;         // [vocab, hidden]: BLOOM word_embeddings, MPT wte
    Buffer embedding_scales;  // quantized only
    QuantFormat embedding_quant = QuantFormat::None;
    NormWeights embedding_norm;        // BLOOM word_embeddings_layernorm; absent elsewhere
    Buffer position_embedding;         // MPT wpe [max_seq_len, hidden] with learned_pos_emb
    std::vector<LayerWeights> layers;  // n_layer entries; a stage's others are empty
    NormWeights final_norm;            // BLOOM ln_f, MPT norm_f
    Buffer lm_head;                    // [vocab, hidden] when not tied to the embedding
    Buffer lm_head_scales;             // quantized only
    QuantFormat lm_head_quant = QuantFormat::None;
    // Baichuan2's NormHead: 1 / |row| of the head as the GPU reads it, [vocab] fp32; the
    // logits are scaled by it, which is multiplying by the row-normalized matrix.
    Buffer lm_head_row_scales;
    std::uint64_t bytes = 0;  // device bytes of all of the above
};

// A quantized checkpoint's own format; fp16 when every weight the model uses is stored as
// F16, else fp32 (BF16 is widened exactly; fp16 would lose its range).
WeightFormat default_weight_format(const ShardedCheckpoint& checkpoint, const ModelConfig& config);

struct WeightUploadProgress {
    std::uint64_t bytes_done = 0;  // checkpoint bytes uploaded so far
    std::uint64_t total_bytes = 0;
};

// Checks the checkpoint against the configuration (check_model_checkpoint), then uploads
// every tensor in `format`: dense tensors converted through fp32, matrices of an ordinary
// checkpoint quantized row by row at load time, a quantized checkpoint's planes as they are
// (it loads only in its own format). A value that does not fit fp16 is refused naming the
// tensor, and with check_finite so is a NaN or infinite weight (or quantization scale): a
// corrupt checkpoint is named at load, not found as non-finite logits at sampling time.
// `progress` is called after each tensor. With `layers`, only the tensors a stage of those
// layers owns (stage_tensors) are read and uploaded.
ModelWeights upload_weights(Context& ctx, const ModelConfig& config, const ShardedCheckpoint& checkpoint,
                            WeightFormat format, const std::function<void(const WeightUploadProgress&)>& progress = {},
                            bool check_finite = true, std::optional<LayerRange> layers = std::nullopt);

// Weights of the right shapes filled with seeded random values (weight_distribution's
// ranges), without a checkpoint: for benchmarks of model shapes no file exists for
// (vkf-bench's block and model suites).
ModelWeights synthetic_weights(Context& ctx, const ModelConfig& config, WeightFormat format,
                               std::optional<LayerRange> layers = std::nullopt);

}  // namespace vkf
