#pragma once
// The tensors a checkpoint of a model configuration holds, and the check that a
// checkpoint holds them.

#include "host/spec/model_config.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

class ShardedCheckpoint;

// What a weight is for; the checkpoint writer picks its random distribution from it.
enum class TensorRole { Embedding, NormWeight, NormBias, LinearWeight, LinearBias };

struct ExpectedTensor {
    std::string name;  // as Hugging Face names it, without the "transformer." prefix
    std::vector<std::size_t> shape;
    TensorRole role;
};

// Every tensor a checkpoint of this configuration holds, in the order of the forward
// pass. lm_head.weight [vocab, hidden] is listed only when tie_word_embeddings is false.
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// The name a Hugging Face *ForCausalLM checkpoint stores a tensor under:
// "transformer." + name, except lm_head.weight, which sits outside the transformer.
std::string checkpoint_tensor_name(std::string_view name);

// Checks that every expected tensor is present (with or without the "transformer."
// prefix) with the expected shape and a dtype vkformer reads (F32, F16, BF16). Throws one
// vkf::Error listing the problems, each naming the file and the tensor. Tensors the
// configuration does not use are ignored.
void check_checkpoint(const ShardedCheckpoint& checkpoint, const ModelConfig& config);

// Throws the one vkf::Error a checkpoint check reports, when `problems` is not empty:
// "`subject` does not match the FAMILY config (N problems):" and the first 20, one a line.
void throw_if_problems(std::string_view subject, const ModelConfig& config, const std::vector<std::string>& problems);

}  // namespace vkf
