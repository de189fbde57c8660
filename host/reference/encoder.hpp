#pragma once
// The double-precision CPU reference of a JinaBERT forward pass (host/spec/encoder_config.hpp):
// the ground truth that tests and `vkf-embed --check` compare the GPU encoder against.
//
// Semantics of jinaai/jina-bert-implementation's JinaBertModel at inference (no dropout, one
// sequence, every token valid, token_type_ids all 0):
//   x = LayerNorm(word_embeddings[ids] + token_type_embeddings[0])      embeddings.LayerNorm
//   per layer:
//     q, k, v = query(x), key(x), value(x)                              Linear with bias
//     a = softmax(q.k / sqrt(head_dim) - slope_h |i - j|) . v           bidirectional
//     x = LayerNorm(attention.output.dense(a) + x)                      post-LN
//     g = mlp.gated_layers(x)                                           [tokens, 2 I], no bias
//     x = LayerNorm(mlp.wo(GELU(g[:, :I]) * g[:, I:]) + x)              exact GELU, post-LN
// The slopes are _get_alibi_head_slopes: the paper's with maximum bias 8, for any head count
// (alibi_slope in host/spec/alibi.hpp gives the same). Weights are held as float32, every
// activation and sum in double.

#include "host/quant/quant_format.hpp"
#include "host/spec/encoder_config.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace vkf {
class ShardedCheckpoint;
}

namespace vkf::reference {

struct EncoderOptions {
    // Round every weight to fp16 first: what a GPU encoder with fp16 weight storage reads.
    bool round_weights_to_f16 = false;
    // Quantize every matrix (quantized_role) to this format and use its exact dequantized
    // weights (the rest rounded to fp16): what a GPU encoder quantized at load time reads.
    QuantFormat quantize = QuantFormat::None;
    unsigned threads = 0;      // 0: std::thread::hardware_concurrency()
    std::uint32_t window = 0;  // symmetric key window (AttentionParams::window); 0: none
};

class Encoder {
public:
    // Checks the checkpoint against the config (check_encoder_checkpoint) and reads every
    // weight into memory.
    Encoder(const EncoderConfig& config, const ShardedCheckpoint& checkpoint, EncoderOptions options = {});
    ~Encoder();
    Encoder(Encoder&&) noexcept;
    Encoder& operator=(Encoder&&) noexcept;

    const EncoderConfig& config() const { return config_; }

    // The last layer's token states [ids.size(), hidden]. Throws vkf::Error for no ids or an
    // id >= vocab_size, naming it.
    std::vector<double> forward(std::span<const std::uint32_t> ids) const;

private:
    struct Weights;

    EncoderConfig config_;
    EncoderOptions options_;
    std::unique_ptr<const Weights> weights_;
};

}  // namespace vkf::reference
