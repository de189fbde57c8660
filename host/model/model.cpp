#include "host/model/model.hpp"

#include "base/error.hpp"
#include "host/ops/ops.hpp"
#include "host/quant/gguf_tensor_file.hpp"
#include "host/spec/alibi.hpp"

#include <string>
#include <utility>

namespace vkf {

Model::Model(Context& ctx, const std::filesystem::path& dir, ModelOptions options)
    : Model(ctx, read_model_config(dir), open_model_checkpoint(dir), std::move(options)) {}

Model::Model(Context& ctx, ModelConfig config, ShardedCheckpoint checkpoint, ModelOptions options)
    : ctx_(ctx), config_(std::move(config)), checkpoint_(std::make_unique<ShardedCheckpoint>(std::move(checkpoint))) {
    config_ = resolve_with_checkpoint(config_, *checkpoint_);
    check_head_dim(config_.head_dim);
    layers_ = options.layers.value_or(all_layers(config_));
    check_layer_range(config_, layers_);
    const WeightFormat format = options.weights.value_or(default_weight_format(*checkpoint_, config_));
    const std::string what = "model '" + checkpoint_->source().string() + "'" +
                             (options.layers ? " (" + describe(layers_, config_) + ")" : std::string());
    check_model_fits(ctx, estimate_model_memory(config_, format, options.session, layers_), what);
    weights_ =
        upload_weights(ctx, config_, *checkpoint_, format, options.progress, options.check_finite_weights, layers_);
    slopes_ = model_alibi_slopes(config_);
}

Model::Model(Context& ctx, const ModelConfig& config, WeightFormat format)
    : Model(ctx, config, format, all_layers(config)) {}

Model::Model(Context& ctx, const ModelConfig& config, WeightFormat format, LayerRange layers)
    : ctx_(ctx), config_(config), layers_(layers) {
    validate(config_);
    check_head_dim(config_.head_dim);
    check_layer_range(config_, layers_);
    check_model_fits(ctx, estimate_model_memory(config_, format, {}, layers_), "a model of this configuration");
    weights_ = synthetic_weights(ctx, config_, format, layers_);
    slopes_ = model_alibi_slopes(config_);
}

const ShardedCheckpoint& Model::checkpoint() const {
    if (!checkpoint_) {
        throw Error("model: synthetic weights have no checkpoint");
    }
    return *checkpoint_;
}

}  // namespace vkf
