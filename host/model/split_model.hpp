#pragma once
// A checkpoint loaded as the stages of a layer split, stage i on Context i (several devices
// of this process, or one device several times): each stage reads and uploads only its
// layers' tensors (ModelOptions::layers). The ranges are given (--split 12,12) or divided by
// each Context's memory budget (auto_split).

#include "host/model/layer_split.hpp"
#include "host/model/model.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace vkf {

// What moving activations between stages cost (vkf-run --json's "split" object, vkf-bench).
struct SplitStats {
    std::uint64_t hand_offs = 0;       // hidden rows passed from a stage to the next, per step
    std::uint64_t transfer_bytes = 0;  // fp32 bytes of them
    // Wall time of the hand-offs' host copies: every non-last stage's download of its hidden
    // rows and every later stage's upload of them (SessionStats::hand_off_ms, summed).
    double transfer_ms = 0.0;
    double stage_ms = 0.0;  // wall time of the stages' steps, hand-offs included
};

// Throws vkf::Error unless `stages` are of one configuration, their layers contiguous from
// layer 0 to the last (the first holding the embedding, the last the head).
void check_stages(std::span<const Model* const> stages);

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

    // The stage models in layer order (what make_front takes).
    std::span<const Model* const> stages() const { return pointers_; }
    const std::vector<LayerRange>& ranges() const { return ranges_; }
    const ModelConfig& config() const { return models_.front()->config(); }

private:
    std::vector<LayerRange> ranges_;
    std::vector<std::unique_ptr<Model>> models_;
    std::vector<const Model*> pointers_;
};

}  // namespace vkf
