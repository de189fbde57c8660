#pragma once
// A llama.cpp GGUF model as a vkformer checkpoint: the metadata of llama.cpp's `bloom`
// architecture mapped to a ModelConfig, its tensors (token_embd, blk.N.attn_qkv, ...) to
// BLOOM's Hugging Face names, and both written as a checkpoint directory (config.json and
// model.safetensors) that every loader of vkformer reads.
//
// llama.cpp's converter (conversion/bloom.py) reorders BLOOM's fused QKV from per head
// [n_head, 3, head_dim] rows to [q | k | v]; the reverse permutation is applied here, so the
// checkpoint is bit for bit the one it was converted from. Tensors of F32, F16 and BF16 are
// copied as they are; every other ggml type is refused naming the tensor and the type (Q8_0
// and Q4_0 included: their blocks hold the same values as vkformer's q8_0/q4_0, but loading
// them is not done yet). Every other architecture is refused by name.

#include "host/io/gguf.hpp"
#include "host/spec/model_config.hpp"

#include <filesystem>

namespace vkf {

// Throws vkf::Error naming the file and the key for another architecture, a missing or
// malformed key, or dimensions vkformer's BLOOM cannot have (feed_forward_length != 4 x
// embedding_length, head_count_kv != head_count, a vocabulary that disagrees with token_embd).
ModelConfig model_config_from_gguf(const GgufFile& file);

// Writes config.json and model.safetensors into `dir` (created when needed). Throws
// vkf::Error naming the file and the tensor for a tensor of an unread type, a name that is not
// one of BLOOM's, or a shape that disagrees with the metadata.
void write_checkpoint_from_gguf(const GgufFile& file, const std::filesystem::path& dir);

}  // namespace vkf
