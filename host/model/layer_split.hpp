#pragma once
// Dividing a decoder's layers over several devices (issue 31): `auto` gives every device as
// many layers as its memory budget holds, from the memory estimate (memory_estimate.hpp),
// with the embedding on the first device and the final norm and head on the last.

#include "host/model/layer_range.hpp"
#include "host/model/memory_estimate.hpp"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace vkf {

// The memory estimate of a stage holding `range` (the embedding with layer 0, the head with
// the last layer); throws vkf::Error for a range that is not one.
ModelMemoryEstimate estimate_stage_memory(const ModelConfig& config, WeightFormat format, const SessionSize& session,
                                          const LayerRange& range);

// Contiguous ranges, one per budget (bytes a device's buffers can still get,
// Context::memory_budget().available()), in proportion to the layers each budget holds after
// its stage's fixed part (embedding, head, activations). Throws vkf::Error naming both numbers
// (what the model needs over these devices, what they have) when the model does not fit their
// sum, naming the device when one cannot hold even one layer, and for more devices than layers.
// `stage_noun` names a stage's holder in those messages ("device"; "rank" under MPI).
std::vector<LayerRange> auto_split(const ModelConfig& config, WeightFormat format, const SessionSize& session,
                                   std::span<const std::uint64_t> budgets, std::string_view stage_noun = "device");

}  // namespace vkf
