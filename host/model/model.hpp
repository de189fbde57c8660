#pragma once
// An ALiBi decoder (BLOOM, MPT, Falcon-RW, Baichuan, Jais) on the device: its configuration
// and weights. Sequences run through it in a Batch (host/model/batch.hpp: many at once over a
// paged KV cache) or a Session (host/model/session.hpp: one).
//
// Block structure (each family's Hugging Face modeling code, inference; host/reference/
// model.hpp spells out every family):
//   h = embed(ids) (+ MPT's learned positions) (* Jais' embedding scale) (BLOOM: then LN)
//   per layer: h += out(attn(qkv(norm1(h)))); h += down(mlp(norm2(h)))
//   logits = head(norm_f(h)) (* MPT's or Jais' logit scale, * Baichuan2's 1 / |head row|)
// where norm is a LayerNorm or (Baichuan) an RMSNorm, mlp is act(up(x)) or the gated
// act(gate(x)) * up(x) (Baichuan, Jais), and BLOOM's post-LN variant adds norm1(h) and
// norm2(h) as the residuals. Attention is causal with ALiBi (the family's slopes as a slope
// table; Falcon's bias bf16-rounded and added before the scale; Jais' alibi_scaling), or
// without it (MPT alibi false). The fused QKV output is [n_head, 3, head_dim] per token
// (BLOOM, Falcon) or [q | k | v] with n_kv_head key and value heads; the KV-append kernel
// reads either layout straight into the cache.
//
// Activations are fp32, the KV cache fp16 (or fp32, SessionOptions::kv_dtype); weights fp32,
// fp16, or q8_0/q4_0 matrices with fp16 norms and biases (ModelWeights).

#include "host/model/memory_estimate.hpp"
#include "host/model/weights.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

struct ModelOptions {
    // Default: default_weight_format(). An ordinary checkpoint loads in any format (its
    // matrices quantized at load time for q8_0/q4_0); a quantized one only in its own.
    std::optional<WeightFormat> weights = std::nullopt;
    std::function<void(const WeightUploadProgress&)> progress = {};
    // Refuse, naming the tensor and the element, a checkpoint holding a NaN or infinite weight
    // (costs one look at every value as it is uploaded).
    bool check_finite_weights = true;
    // The session the model is loaded for: before uploading anything, the constructor refuses
    // (vkf::Error naming the numbers) a model whose weights plus this session's KV cache and
    // activations do not fit the device's memory budget (memory_estimate.hpp). Default: the
    // weights alone.
    SessionSize session = {};
    // One stage of a layer split (host/model/layer_range.hpp): only these layers' tensors, and
    // the embedding or head parts the stage owns, are read and uploaded, and only they count
    // in the memory check. Default: every layer.
    std::optional<LayerRange> layers = std::nullopt;
};

class Model {
public:
    // Reads DIR/config.json and the safetensors checkpoint in DIR (single or sharded), or the
    // GGUF file DIR names (host/quant/gguf_tensor_file.hpp), checks them against each other and
    // uploads the weights.
    Model(Context& ctx, const std::filesystem::path& dir, ModelOptions options = {});
    // The same from a configuration and a checkpoint already open (a GGUF file from a
    // descriptor: open_gguf_model).
    Model(Context& ctx, ModelConfig config, ShardedCheckpoint checkpoint, ModelOptions options = {});
    // A model of this shape with synthetic_weights(): for benchmarks, no checkpoint.
    Model(Context& ctx, const ModelConfig& config, WeightFormat format);
    // One stage of such a model (tests, benchmarks of a split).
    Model(Context& ctx, const ModelConfig& config, WeightFormat format, LayerRange layers);
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    Context& context() const { return ctx_; }
    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    // The checkpoint the weights came from; throws vkf::Error for synthetic weights.
    const ShardedCheckpoint& checkpoint() const;
    WeightFormat weight_format() const { return weights_.format; }
    // The ALiBi slope of every head, as the attention kernel receives them.
    const std::vector<float>& alibi_slopes() const { return slopes_; }

    // The layers this model runs: all of them, or one stage's of a layer split.
    LayerRange layers() const { return layers_; }
    // Holds the embedding (BLOOM's embedding LayerNorm, MPT's learned positions): layer 0.
    bool first_stage() const { return layers_.begin == 0; }
    // Holds the final norm and the head (a tied head keeps the embedding): the last layer.
    bool last_stage() const { return layers_.end == config_.n_layer; }
    bool whole() const { return first_stage() && last_stage(); }

private:
    Context& ctx_;
    ModelConfig config_;
    std::unique_ptr<ShardedCheckpoint> checkpoint_;
    LayerRange layers_;
    ModelWeights weights_;
    std::vector<float> slopes_;
};

}  // namespace vkf
