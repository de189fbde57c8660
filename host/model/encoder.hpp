#pragma once
// A JinaBERT encoder on the device (host/spec/encoder_config.hpp has the forward pass): its
// configuration and weights, and encode(), which runs one sequence of token ids through it
// as one command list and returns the token states or their pooled embedding.
//
// Per layer: the query, key and value projections (three matmuls with bias), the attention
// op with no mask and the symmetric ALiBi bias (AlibiMode::Symmetric, the paper's slopes with
// maximum bias 8), the output projection with the residual added in its epilogue, LayerNorm;
// gated_layers into [tokens, 2 I], the GEGLU op reading its two halves as row-strided views
// (no copy), wo with the residual in its epilogue, LayerNorm. Activations are fp32; weights
// fp32, fp16, or q8_0/q4_0 matrices with fp16 norms, biases and token-type table.

#include "host/model/weights.hpp"
#include "host/spec/encoder_config.hpp"
#include "host/spec/pooling.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace vkf {

struct EncoderOptions {
    // Default: fp16 when every tensor the encoder reads is stored as F16, else fp32.
    std::optional<WeightFormat> weights = std::nullopt;
    // Refuse, naming the tensor and the element, a checkpoint holding a NaN or infinite weight.
    bool check_finite_weights = true;
};

struct EncoderLayerWeights {
    LinearWeights query, key, value, attn_out;  // attention.self.*, attention.output.dense
    NormWeights attn_norm;                      // attention.output.LayerNorm
    LinearWeights gated;                        // mlp.gated_layers [2 I, hidden], no bias
    LinearWeights wo;                           // mlp.wo
    NormWeights mlp_norm;                       // mlp.layernorm
};

struct EncoderWeights {
    WeightFormat format;
    Buffer word_embeddings;         // [vocab, hidden]
    Buffer word_embeddings_scales;  // quantized only
    Buffer token_type;              // [type_vocab_size, hidden], dense
    NormWeights embedding_norm;     // embeddings.LayerNorm
    std::vector<EncoderLayerWeights> layers;
    std::uint64_t bytes = 0;  // device bytes of all of the above
};

struct EncodeOptions {
    Pooling pooling = Pooling::Mean;
    bool normalize = false;  // L2-normalize the pooled embedding (not with Pooling::None)
    // Symmetric key window (AttentionParams::window): token i sees the keys with |i - j| <= window;
    // 0: all of them.
    std::uint32_t window = 0;
    // Fill every activation buffer with NaN first, so that an element no kernel writes shows
    // (tests).
    bool poison = false;
};

class Encoder {
public:
    // Reads DIR/config.json and the safetensors checkpoint in DIR (single or sharded; tensor
    // names with or without "bert."), checks them against each other and uploads the weights.
    // Throws vkf::Error for a head size the attention kernels do not run.
    Encoder(Context& ctx, const std::filesystem::path& dir, EncoderOptions options = {});
    Encoder(const Encoder&) = delete;
    Encoder& operator=(const Encoder&) = delete;

    Context& context() const { return ctx_; }
    const EncoderConfig& config() const { return config_; }
    const ShardedCheckpoint& checkpoint() const { return *checkpoint_; }
    const EncoderWeights& weights() const { return weights_; }
    WeightFormat weight_format() const { return weights_.format; }

    // The states of one sequence, [ids.size(), hidden] (Pooling::None), or its embedding
    // [hidden] (Mean, Cls). Every token attends to every other one (no padding). Throws
    // vkf::Error for no ids, an id >= vocab_size (naming it), or normalize with Pooling::None.
    std::vector<float> encode(std::span<const std::uint32_t> ids, const EncodeOptions& options = {});
    // GPU time of the last encode(), where the device has timestamps; else 0.
    double last_gpu_ms() const { return last_gpu_ms_; }

private:
    Context& ctx_;
    EncoderConfig config_;
    std::unique_ptr<ShardedCheckpoint> checkpoint_;
    EncoderWeights weights_;
    double last_gpu_ms_ = 0.0;
};

}  // namespace vkf
