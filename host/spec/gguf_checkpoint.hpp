#pragma once
// A llama.cpp GGUF model as a vkformer checkpoint: the metadata of llama.cpp's `bloom`, `mpt`,
// `baichuan`, `jais` and `refact` architectures mapped to a ModelConfig (gguf_config.cpp), their tensors
// (token_embd, blk.N.attn_qkv, ...) to the family's Hugging Face names, which
// host/quant/gguf_tensor_file.hpp reads in place (gguf_checkpoint.cpp).
//
// Where llama.cpp's converter moved rows, they are read back in the family's order, so the model
// sees bit for bit the checkpoint it was converted from: BLOOM's fused QKV, which
// conversion/bloom.py reorders from per head [n_head, 3, head_dim] rows to [q | k | v], and
// Baichuan's W_pack, which conversion/baichuan.py splits into attn_q, attn_k and attn_v and whose
// q and k rows it permutes for rotary positions; Jais' Conv1D matrices, which conversion/jais.py
// transposes to [out, in], are presented [in, out] again. Every other architecture is refused by name.
// tokenizer.ggml.* becomes tokenizer.json for the byte-level BPE tokenizers of BLOOM and GPT-2.

#include "host/io/gguf.hpp"
#include "host/spec/encoder_config.hpp"
#include "host/spec/model_config.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

// Throws vkf::Error naming the file and the key for another architecture, a missing or
// malformed key, or dimensions the family cannot have (BLOOM's feed_forward_length != 4 x
// embedding_length, head_count_kv != head_count outside MPT, a token_embd of another width,
// Baichuan-7B's 32 blocks, which llama.cpp runs with rotary positions).
ModelConfig model_config_from_gguf(const GgufFile& file);

// A GGUF tensor under the family's Hugging Face name (the name check_model_checkpoint looks
// for), and where llama.cpp's converter reordered its rows, the order to read them back in:
// entry r of row_order(config) is the stored row of the family's row r. A tensor the converter
// split is `part` of `parts` GGUF tensors (of equal shape unless part_rows says) whose rows, one after the other, are
// the stored rows of the family's tensor.
struct GgufTensorName {
    std::string name;
    std::vector<std::uint32_t> (*row_order)(const ModelConfig& config) = nullptr;
    std::uint64_t rows = 0;  // with row_order: the first dimension of the family's tensor
    std::uint32_t part = 0, parts = 1;
    // Empty: the parts are of equal shape. Else the rows of each (Refact's q, and its one-head
    // k and v), which must match; their other dimensions must be equal.
    std::vector<std::uint64_t> part_rows;
    // The family stores it [in, out] (GPT-2's Conv1D: Jais), the converter [out, in].
    bool transposed = false;
};
// nullopt for a name that is not one of the architecture's.
std::optional<GgufTensorName> gguf_tensor_name(const ModelConfig& config, std::string_view gguf_name);
// "BLOOM", "MPT": the architecture as messages name it.
std::string_view gguf_architecture_label(ModelFamily family);

// llama.cpp's `jina-bert-v2` (embeddings): whether the file is one, its EncoderConfig (throws
// vkf::Error naming the file and the key, or the architecture when it is another), and its
// tensors under JinaBERT's Hugging Face names (nullopt for a name that is not one of them).
bool is_gguf_encoder(const GgufFile& file);
EncoderConfig encoder_config_from_gguf(const GgufFile& file);
std::optional<GgufTensorName> gguf_encoder_tensor_name(const EncoderConfig& config, std::string_view gguf_name);

// The Hugging Face tokenizer.json that tokenizer.ggml.* was converted from, for llama.cpp's
// byte-level BPE ("gpt2") with the pre-tokenizers "gpt-2" and "bloom": the vocabulary (its
// [PADn] fillers left out), the merges, CONTROL and USER_DEFINED tokens as added tokens.
// nullopt for a file without one or with another (the run then needs --tokenizer). Throws
// vkf::Error naming the file for malformed tokenizer keys.
std::optional<std::string> tokenizer_json_from_gguf(const GgufFile& file);

}  // namespace vkf
