#pragma once
// A checkpoint loaded as the stages of a layer split, stage i on Context i (several devices
// of this process, or one device several times): each stage reads and uploads only its
// layers' tensors (ModelOptions::layers). The ranges are given (--split 12,12) or divided by
// each Context's memory budget (auto_split).

#include "host/model/layer_split.hpp"
#include "host/model/model.hpp"

#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace vkf {

// The layer ranges of a split over `contexts`: `counts` (one per context), or empty for
// auto_split by their memory budgets (Contexts on one physical device share its budget).
// What SplitModel loads; a caller that loads the stages itself (vkf-server --devices) plans
// with it. Throws vkf::Error as SplitModel does.
std::vector<LayerRange> plan_split(std::span<const Context* const> contexts, const std::filesystem::path& dir,
                                   std::span<const std::uint32_t> counts, const ModelOptions& options);

class SplitModel {
public:
    // `counts`: layers per stage, one per context; empty: auto_split over the contexts' memory
    // budgets for options.session. options.layers must be unset; options.progress is called
    // for every stage's upload in turn. Throws vkf::Error naming the problem for a split that
    // does not fit the model, the devices or their memory.
    SplitModel(std::span<Context* const> contexts, const std::filesystem::path& dir,
               std::span<const std::uint32_t> counts, ModelOptions options = {});
    SplitModel(const SplitModel&) = delete;
    SplitModel& operator=(const SplitModel&) = delete;

    // The stage models in layer order (what SplitSession takes).
    std::span<const Model* const> stages() const { return pointers_; }
    const std::vector<LayerRange>& ranges() const { return ranges_; }
    const ModelConfig& config() const { return models_.front()->config(); }

private:
    std::vector<LayerRange> ranges_;
    std::vector<std::unique_ptr<Model>> models_;
    std::vector<const Model*> pointers_;
};

}  // namespace vkf
