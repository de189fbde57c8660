#pragma once
// Seeded random weights for models no file exists for: checkpoints in the Hugging Face
// format for tests and demos where no model can be downloaded, and synthetic device
// weights for benchmarks.
//
// Weights are scaled so that a forward pass gives finite, non-degenerate logits:
// LayerNorm weights 1 + U(-0.1, 0.1), biases U(-0.02, 0.02), embeddings and linear
// weights uniform with standard deviation 0.02 (what Hugging Face initializes with).

#include "host/io/safetensors_writer.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string_view>

namespace vkf {

// value = offset + scale * U(-1, 1).
struct WeightDistribution {
    float offset;
    float scale;
};
WeightDistribution weight_distribution(TensorRole role);

// The values of the tensor `name` (role `role`) of the checkpoint with seed `seed`, as a
// TensorSource's values function: element i depends only on the seed, the name and i.
std::function<void(std::uint64_t first, std::span<float> out)> seeded_values(std::uint64_t seed, std::string_view name,
                                                                             TensorRole role);

// Writes a checkpoint of `config` in exactly the Hugging Face layout into `dir`:
// config.json (hf_config_json) and the safetensors files of write_safetensors_checkpoint,
// tensor names carrying the "transformer." prefix as BloomForCausalLM / MPTForCausalLM
// checkpoints do. Every value depends only on the seed, the tensor's name and the
// element's index, not on the dtype or the sharding: the same seed gives the same model in
// every layout (up to the rounding of the dtype). dtype F32, F16 or BF16. Throws vkf::Error
// naming the file on any failure.
void write_random_checkpoint(const std::filesystem::path& dir, const ModelConfig& config, std::uint64_t seed,
                             DType dtype, int shards = 1, const CheckpointProgressCallback& progress = {});

}  // namespace vkf
