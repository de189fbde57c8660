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
// them is not done yet). Every other architecture is refused by name. tokenizer.ggml.* becomes
// tokenizer.json for the byte-level BPE tokenizers of BLOOM and GPT-2.

#include "host/io/gguf.hpp"
#include "host/spec/model_config.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace vkf {

// Throws vkf::Error naming the file and the key for another architecture, a missing or
// malformed key, or dimensions vkformer's BLOOM cannot have (feed_forward_length != 4 x
// embedding_length, head_count_kv != head_count, a vocabulary that disagrees with token_embd).
ModelConfig model_config_from_gguf(const GgufFile& file);

// Writes config.json and model.safetensors into `dir` (created when needed). Throws
// vkf::Error naming the file and the tensor for a tensor of an unread type, a name that is not
// one of BLOOM's, or a shape that disagrees with the metadata.
// tokenizer.json is written too when tokenizer_json_from_gguf gives one.
void write_checkpoint_from_gguf(const GgufFile& file, const std::filesystem::path& dir);

// The Hugging Face tokenizer.json that tokenizer.ggml.* was converted from, for llama.cpp's
// byte-level BPE ("gpt2") with the pre-tokenizers "gpt-2" and "bloom": the vocabulary (its
// [PADn] fillers left out), the merges, CONTROL and USER_DEFINED tokens as added tokens.
// nullopt for a file without one or with another (the run then needs --tokenizer). Throws
// vkf::Error naming the file for malformed tokenizer keys.
std::optional<std::string> tokenizer_json_from_gguf(const GgufFile& file);

}  // namespace vkf
