#pragma once
// A contiguous range of a decoder's layers: what one stage of a layer-split model holds
// (issue 31). Stage r of a split runs layers [begin, end) with their KV cache; the first
// stage (begin 0) also holds the embedding (BLOOM's embedding LayerNorm, MPT's learned
// positions), the last (end n_layer) the final norm and the head (a tied head: the
// embedding too). Activations pass from stage to stage as fp32 hidden rows.

#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vkf {

struct LayerRange {
    std::uint32_t begin = 0, end = 0;  // layers [begin, end) of config.n_layer
    std::uint32_t size() const { return end - begin; }
    bool contains(std::uint32_t layer) const { return layer >= begin && layer < end; }
    bool operator==(const LayerRange&) const = default;
};

LayerRange all_layers(const ModelConfig& config);
// "layers 3..5 of 12" (begin..end-1), for messages.
std::string describe(const LayerRange& range, const ModelConfig& config);

// Throws vkf::Error unless 0 <= begin < end <= n_layer.
void check_layer_range(const ModelConfig& config, const LayerRange& range);

// The tensors a stage of `range` uploads (expected_tensors' order): its layers' tensors, the
// embedding's on the first stage, the final norm and head on the last (the embedding as well
// when the head is tied to it).
bool stage_owns(const ModelConfig& config, const LayerRange& range, const ExpectedTensor& tensor);
std::vector<ExpectedTensor> stage_tensors(const ModelConfig& config, const LayerRange& range);

// Contiguous ranges of `counts` layers each; throws vkf::Error naming the problem unless every
// count is at least 1 and they sum to n_layer ("--split 12,12").
std::vector<LayerRange> split_layers(const ModelConfig& config, std::span<const std::uint32_t> counts);
// "12,12" -> {12, 12}; throws vkf::Error for anything but positive whole numbers and commas.
std::vector<std::uint32_t> parse_layer_counts(const std::string& text);

}  // namespace vkf
