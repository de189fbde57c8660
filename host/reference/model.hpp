#pragma once
// The double-precision CPU reference of a whole decoder forward pass: the ground truth that
// tests and `vkf-run --check` compare the GPU model against.
//
// Semantics are those of each family's Hugging Face modeling code at inference (no dropout,
// no KV cache: every call runs the whole sequence, token t at position t, causal attention):
// transformers' BloomForCausalLM and FalconForCausalLM (eager attention), llm-foundry's
// MPTForCausalLM, and the modeling_baichuan.py and modeling_jais.py of those models'
// repositories. BLOOM and MPT as below; the others, and MPT's options (grouped-query heads,
// qk_ln, softmax_scale, logit_scale, learned positions, no ALiBi), as docs/DESIGN.md "Model
// families" writes the forward pass: Falcon-RW like BLOOM without the embedding LayerNorm,
// with exact GELU and its bias bf16(slope * j) added before the scale; Baichuan with
// RMSNorms, [q | k | v] W_pack, down(silu(gate) * up) and (Baichuan2) the head's rows divided
// by their norms; Jais with GPT-2's blocks, c_proj(c_fc(x) * silu(c_fc2(x))), q.k / head_dim,
// the muP embedding and logit multipliers and alibi_scaling.
//   BLOOM: word_embeddings -> word_embeddings_layernorm; per layer: input_layernorm,
//          query_key_value (each token's output viewed as [n_head, 3, head_dim]),
//          softmax(q.k / sqrt(head_dim) + slope_h * key position, causal) . v, dense +
//          residual, post_attention_layernorm, dense_h_to_4h, GELU (tanh form),
//          dense_4h_to_h + residual; ln_f; lm_head (word_embeddings when tied).
//   MPT:   wte; per block: norm_1, Wqkv (output [q | k | v], clamped to [-clip_qkv,
//          clip_qkv] when set), attention with ALiBi (alibi_bias_max, gen_slopes order),
//          out_proj + residual, norm_2, ffn.up_proj, GELU (erf form), ffn.down_proj +
//          residual; norm_f; logits from wte (or lm_head.weight when untied). With no_bias
//          no linear layer or LayerNorm has a bias.
// Weights are held as float32 (exact for F32, F16 and BF16 checkpoints; a BLOOM-560m
// needs 2.2 GB), every activation and sum in double. Matmuls run on several threads; each
// output is summed in the same order whatever the thread count, so results are
// bit-identical across runs and thread counts.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "host/quant/quant_format.hpp"
#include "host/spec/model_config.hpp"

namespace vkf {
class ShardedCheckpoint;
}

namespace vkf::reference {

struct ModelOptions {
    // Round every weight to fp16 first (what a GPU run with fp16 weight storage reads); with
    // `quantize`, or from a quantized checkpoint, only the tensors stored dense (norms, biases).
    bool round_weights_to_f16 = false;
    // Quantize every matrix (quantized_role) of an ordinary checkpoint to this format and
    // use its exact dequantized weights: what a GPU model quantized at load time reads.
    QuantFormat quantize = QuantFormat::None;
    unsigned threads = 0;  // 0: std::thread::hardware_concurrency()
    // Called after each layer of forward() (layer index, n_layer), for progress output on big models.
    std::function<void(std::uint32_t, std::uint32_t)> progress;
};

class Model {
public:
    // Validates the config, checks the checkpoint against it (check_model_checkpoint: every
    // tensor present with its shape and dtype; one vkf::Error lists the problems) and reads
    // every weight into memory (dequantizing a quantized checkpoint's matrices exactly); the
    // checkpoint is not needed afterwards.
    Model(const ModelConfig& config, const ShardedCheckpoint& checkpoint, ModelOptions options = {});
    ~Model();
    Model(Model&&) noexcept;
    Model& operator=(Model&&) noexcept;

    const ModelConfig& config() const { return config_; }

    // Logits [ids.size(), vocab_size], row-major, for every position of the sequence (causal;
    // position of token t is t). Ids >= vocab_size throw vkf::Error naming the id.
    std::vector<double> forward(std::span<const std::uint32_t> ids) const;
    // The same as a KV-cached run computes it when the tokens arrive in chunks ending at
    // `chunk_ends` (increasing, the last one ids.size()): each chunk's rows attend with the
    // key count at its end. Only Jais' dynamic alibi_scaling depends on that count, so for
    // every other model this equals forward(ids).
    std::vector<double> forward(std::span<const std::uint32_t> ids, std::span<const std::uint32_t> chunk_ends) const;

private:
    struct Weights;

    ModelConfig config_;
    ModelOptions options_;
    std::unique_ptr<const Weights> weights_;
};

}  // namespace vkf::reference
