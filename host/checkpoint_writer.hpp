#pragma once
// Writes seeded random-weight checkpoints in exactly the Hugging Face layout, so that
// tests and demos can run real-format models where no model can be downloaded:
//   config.json             the family's Hugging Face keys, model_type and architectures
//   model.safetensors       when shards == 1, or
//   model-0000k-of-0000N.safetensors + model.safetensors.index.json
// Tensor names carry the "transformer." prefix as BloomForCausalLM / MPTForCausalLM
// checkpoints do. Files are written tensor by tensor in bounded memory, so a
// BLOOM-560m-shaped model (a gigabyte in fp16) never sits in memory.
//
// Weights are scaled so that a forward pass gives finite, non-degenerate logits:
// LayerNorm weights 1 + U(-0.1, 0.1), biases U(-0.02, 0.02), embeddings and linear
// weights uniform with standard deviation 0.02 (what Hugging Face initializes with).
// Every value depends only on the seed, the tensor's name and the element's index, not on
// the dtype or the sharding: the same seed gives the same model in every layout (up to
// the rounding of the dtype).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "host/model_config.hpp"
#include "host/safetensors.hpp"

namespace vkf {

struct CheckpointWriteProgress {
    std::string_view tensor;       // the tensor being written, as named in the file
    std::size_t tensors_done = 0;  // tensors written completely
    std::size_t tensor_count = 0;
    std::uint64_t bytes_done = 0;  // tensor bytes written so far
    std::uint64_t total_bytes = 0;
};
using CheckpointProgressCallback = std::function<void(const CheckpointWriteProgress&)>;

// The config.json text for `config`, with torch_dtype naming `dtype`. Parses back to
// `config` with parse_model_config.
std::string hf_config_json(const ModelConfig& config, SafetensorsDtype dtype);

// Writes the checkpoint into `dir` (created when needed). dtype must be F32, F16 or BF16;
// shards must be between 1 and the number of tensors. A model.safetensors or index left
// in `dir` by an earlier run with the other layout is removed, so that open_checkpoint
// cannot pick up a stale model. Throws vkf::Error naming the file on any failure.
// `progress`, when given, is called after each tensor and, inside tensors of more than
// 2^20 elements, after each 2^20 elements.
void write_random_checkpoint(const std::filesystem::path& dir, const ModelConfig& config, std::uint64_t seed,
                             SafetensorsDtype dtype, int shards = 1, const CheckpointProgressCallback& progress = {});

}  // namespace vkf
