#pragma once
// A BLOOM or MPT checkpoint's weights on the device, one buffer per tensor, all in one
// storage type (fp32 or fp16). The tensors are named by what they do in a block, so the
// forward pass does not care which family they came from.

#include "host/io/safetensors.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vkf {

// A weight matrix [out, in] (PyTorch's Linear.weight layout) and its bias [out], absent
// for MPT's no_bias.
struct LinearWeights {
    Buffer weight;
    Buffer bias;  // !valid() when the layer has none
    std::uint32_t out = 0, in = 0;
};

struct NormWeights {
    Buffer weight;
    Buffer bias;  // !valid() for MPT's no_bias
};

// BLOOM:  attn_norm = input_layernorm, qkv = self_attention.query_key_value
//         ([n_head, 3, head_dim] per token), attn_out = self_attention.dense,
//         mlp_norm = post_attention_layernorm, up = mlp.dense_h_to_4h, down = mlp.dense_4h_to_h.
// MPT:    attn_norm = norm_1, qkv = attn.Wqkv ([q | k | v] per token), attn_out =
//         attn.out_proj, mlp_norm = norm_2, up = ffn.up_proj, down = ffn.down_proj.
struct LayerWeights {
    NormWeights attn_norm;
    LinearWeights qkv;
    LinearWeights attn_out;
    NormWeights mlp_norm;
    LinearWeights up;
    LinearWeights down;
};

struct ModelWeights {
    DType dtype = DType::F32;
    Buffer embedding;            // [vocab, hidden]: BLOOM word_embeddings, MPT wte
    NormWeights embedding_norm;  // BLOOM word_embeddings_layernorm; absent for MPT
    std::vector<LayerWeights> layers;
    NormWeights final_norm;   // BLOOM ln_f, MPT norm_f
    Buffer lm_head;           // [vocab, hidden] when not tied to the embedding
    std::uint64_t bytes = 0;  // device bytes of all of the above
};

// fp16 when every weight the model uses is stored as F16, else fp32 (BF16 is widened
// exactly; fp16 would lose its range).
DType default_weight_dtype(const ShardedCheckpoint& checkpoint, const ModelConfig& config);

struct WeightUploadProgress {
    std::uint64_t bytes_done = 0;  // checkpoint bytes uploaded so far
    std::uint64_t total_bytes = 0;
};

// Checks the checkpoint against the configuration (check_checkpoint), then uploads every
// tensor, converting to `dtype` (F16 and BF16 are converted through fp32). A value that
// does not fit fp16 is refused naming the tensor. `progress` is called after each tensor.
ModelWeights upload_weights(Context& ctx, const ModelConfig& config, const ShardedCheckpoint& checkpoint, DType dtype,
                            const std::function<void(const WeightUploadProgress&)>& progress = {});

// Weights of the right shapes filled with seeded random values (weight_distribution's
// ranges), without a checkpoint: for benchmarks of model shapes no file exists for
// (vkf-bench's block and model suites).
ModelWeights synthetic_weights(Context& ctx, const ModelConfig& config, DType dtype);

}  // namespace vkf
