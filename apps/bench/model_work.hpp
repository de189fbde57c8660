#pragma once
// The work of a forward pass of the model presets, shared by the block and model suites
// (suite_model.cpp) and the batched decoding cases (suite_model_batch.cpp): arithmetic,
// weight bytes read, and the synthetic token ids the cases feed.

#include "host/model/memory_estimate.hpp"
#include "host/quant/quant_format.hpp"
#include "host/spec/model_config.hpp"

#include <cstdint>
#include <vector>

namespace vkf::bench {

// Arithmetic of `tokens` new tokens after `past` cached ones through the layers (an FMA
// counts 2): the linear layers and causal attention (QK^T and PV over the visible keys: at most
// window + 1 a row under a key window, 0 for none).
std::uint64_t layers_flops(const ModelConfig& c, std::uint64_t past, std::uint64_t tokens, std::uint64_t window = 0);

// Weight bytes one forward pass reads: everything but the embedding table, of which it reads
// a row per token, unless the table is also the (tied) LM head.
std::uint64_t bytes_read_per_pass(const ModelConfig& c, WeightFormat format, bool with_head);

// `n` token ids below `vocab`; `stream` picks another sequence of them (a batch's prompts).
std::vector<std::uint32_t> token_ids(std::uint32_t n, std::uint32_t vocab, std::uint32_t stream = 0);

// The largest tensor of the model in `format`: the largest buffer it allocates.
std::uint64_t largest_tensor_bytes(const ModelConfig& c, WeightFormat format);

}  // namespace vkf::bench
