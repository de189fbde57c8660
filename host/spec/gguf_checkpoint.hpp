#pragma once
// A llama.cpp GGUF model as a vkformer checkpoint: the metadata of llama.cpp's `bloom`
// architecture mapped to a ModelConfig, its tensors (token_embd, blk.N.attn_qkv, ...) to
// BLOOM's Hugging Face names, which host/quant/gguf_tensor_file.hpp reads in place.
//
// llama.cpp's converter (conversion/bloom.py) reorders BLOOM's fused QKV from per head
// [n_head, 3, head_dim] rows to [q | k | v]; the reverse permutation is read, so the model
// sees bit for bit the checkpoint it was converted from. Every other architecture is refused
// by name. tokenizer.ggml.* becomes tokenizer.json for the byte-level BPE tokenizers of BLOOM
// and GPT-2.

#include "host/io/gguf.hpp"
#include "host/spec/model_config.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

// Throws vkf::Error naming the file and the key for another architecture, a missing or
// malformed key, or dimensions vkformer's BLOOM cannot have (feed_forward_length != 4 x
// embedding_length, head_count_kv != head_count, a vocabulary that disagrees with token_embd).
ModelConfig model_config_from_gguf(const GgufFile& file);

// A GGUF tensor under the family's Hugging Face name (the name check_model_checkpoint looks
// for), and where llama.cpp's converter reordered its rows, the order to read them back in:
// entry r of row_order(config) is the stored row of the family's row r.
struct GgufTensorName {
    std::string name;
    std::vector<std::uint32_t> (*row_order)(const ModelConfig& config) = nullptr;
    std::uint64_t rows = 0;  // with row_order: the first dimension the tensor must have
};
// nullopt for a name that is not one of the architecture's.
std::optional<GgufTensorName> gguf_tensor_name(const ModelConfig& config, std::string_view gguf_name);
// "BLOOM": the architecture as messages name it.
std::string_view gguf_architecture_label(ModelFamily family);

// The Hugging Face tokenizer.json that tokenizer.ggml.* was converted from, for llama.cpp's
// byte-level BPE ("gpt2") with the pre-tokenizers "gpt-2" and "bloom": the vocabulary (its
// [PADn] fillers left out), the merges, CONTROL and USER_DEFINED tokens as added tokens.
// nullopt for a file without one or with another (the run then needs --tokenizer). Throws
// vkf::Error naming the file for malformed tokenizer keys.
std::optional<std::string> tokenizer_json_from_gguf(const GgufFile& file);

}  // namespace vkf
