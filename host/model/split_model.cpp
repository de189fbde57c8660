#include "host/model/split_model.hpp"

#include "base/error.hpp"
#include "host/quant/gguf_tensor_file.hpp"

#include <fmt/format.h>

#include <string>

namespace vkf {

std::vector<LayerRange> plan_split(std::span<const Context* const> contexts, const std::filesystem::path& dir,
                                   std::span<const std::uint32_t> counts, const ModelOptions& options) {
    if (contexts.empty()) {
        throw Error("split: no devices");
    }
    if (!counts.empty() && counts.size() != contexts.size()) {
        throw Error("split: " + fmt::to_string(counts.size()) + " layer counts for " + fmt::to_string(contexts.size()) +
                    " devices; give one per device");
    }
    const ShardedCheckpoint checkpoint = open_model_checkpoint(dir);
    const ModelConfig config = resolve_with_checkpoint(read_model_config(dir), checkpoint);
    validate(config);
    if (!counts.empty()) {
        return split_layers(config, counts);
    }
    const WeightFormat format = options.weights.value_or(default_weight_format(checkpoint, config));
    std::vector<std::uint64_t> budgets;
    for (const Context* ctx : contexts) {
        budgets.push_back(ctx->memory_budget().available());
    }
    // The same device twice (two Contexts on one GPU, or lavapipe standing in for several)
    // shares one memory: each stage gets its share of it.
    for (std::size_t i = 0; i < contexts.size(); ++i) {
        std::uint64_t sharing = 0;
        for (const Context* other : contexts) {
            sharing += other->device_info().name == contexts[i]->device_info().name &&
                               other->device_info().device_uuid == contexts[i]->device_info().device_uuid
                           ? 1
                           : 0;
        }
        budgets[i] /= sharing;
    }
    return auto_split(config, format, options.session, budgets);
}

SplitModel::SplitModel(std::span<Context* const> contexts, const std::filesystem::path& dir,
                       std::span<const std::uint32_t> counts, ModelOptions options)
    : ranges_(plan_split(std::vector<const Context*>(contexts.begin(), contexts.end()), dir, counts, options)) {
    if (options.layers) {
        throw Error("split: ModelOptions::layers is set by the split, not by the caller");
    }
    for (std::size_t i = 0; i < ranges_.size(); ++i) {
        ModelOptions stage = options;
        stage.layers = ranges_[i];
        models_.push_back(std::make_unique<Model>(*contexts[i], dir, stage));
        pointers_.push_back(models_.back().get());
    }
}

void check_stages(std::span<const Model* const> stages) {
    if (stages.empty()) {
        throw Error("split: no stages");
    }
    const ModelConfig& config = stages.front()->config();
    std::uint32_t next = 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
        const Model& m = *stages[i];
        if (!(m.config() == config)) {
            throw Error(fmt::format("split: stage {} is of another model configuration than stage 0", i));
        }
        if (m.layers().begin != next) {
            throw Error(fmt::format("split: stage {} holds {}, but the stages before end at layer {}", i,
                                    describe(m.layers(), config), next));
        }
        next = m.layers().end;
    }
    if (next != config.n_layer) {
        throw Error(
            fmt::format("split: the stages end at layer {} of {}; the last stage must hold the last layer and the head",
                        next, config.n_layer));
    }
}

}  // namespace vkf
