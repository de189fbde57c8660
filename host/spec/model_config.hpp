#pragma once
// The shape of a model, read from a Hugging Face config.json, and the tensors its
// checkpoint must hold. Two families, the best-known ALiBi decoders:
//   BLOOM (model_type "bloom", BloomForCausalLM) and
//   MPT   (model_type "mpt",   MPTForCausalLM, with attn_config.alibi true).
// Configurations vkformer cannot run faithfully (MPT without ALiBi, QK LayerNorm, a
// custom softmax scale, residuals after the LayerNorm in BLOOM, ...) are refused with an
// error naming the key, rather than run with silently wrong numerics.

#include "host/util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

enum class ModelFamily { Bloom, Mpt };

// "bloom", "mpt": the model_type of config.json.
std::string_view family_name(ModelFamily family);

struct ModelConfig {
    ModelFamily family = ModelFamily::Bloom;
    std::uint32_t vocab_size = 0;
    std::uint32_t hidden = 0;  // BLOOM hidden_size (or n_embed), MPT d_model
    std::uint32_t n_layer = 0;
    std::uint32_t n_head = 0;
    std::uint32_t n_kv_head = 0;   // = n_head: both families use multi-head attention
    std::uint32_t head_dim = 0;    // hidden / n_head
    std::uint32_t ffn_hidden = 0;  // BLOOM 4 * hidden; MPT expansion_ratio * d_model
    double layer_norm_epsilon = 1e-5;
    double alibi_bias_max = 8.0;                    // BLOOM 8; MPT attn_config.alibi_bias_max
    bool no_bias = false;                           // MPT: no bias in any linear layer or LayerNorm
    std::optional<double> clip_qkv = std::nullopt;  // MPT: clamp Wqkv's output to [-c, c]
    std::uint32_t max_seq_len = 2048;               // BLOOM seq_length (2048 when absent); MPT max_seq_len
    bool tie_word_embeddings = true;                // lm_head shares the token embedding matrix
    // config.json's bos_token_id, and eos_token_id (an integer or a list: generation stops at
    // any of them). Absent or null: none.
    std::optional<std::uint32_t> bos_token_id = std::nullopt;
    std::vector<std::uint32_t> eos_token_ids = {};

    bool operator==(const ModelConfig&) const = default;
};

// Bounds on a config's sizes, checked before anything is derived from them: far beyond any
// real checkpoint (the largest ALiBi models have 70 layers, width 14336, vocabulary 250880),
// far below what would let one small config.json cost minutes and gigabytes (a million
// layers would make the loader list twelve million tensors before finding the first missing).
struct ModelLimits {
    static constexpr std::uint32_t max_layers = 1024;
    static constexpr std::uint32_t max_hidden = 1u << 17;
    static constexpr std::uint32_t max_heads = 4096;
    static constexpr std::uint32_t max_ffn_hidden = 1u << 20;
    static constexpr std::uint32_t max_vocab = 1u << 24;
    static constexpr std::uint32_t max_seq_len = 1u << 24;
};

// Throws vkf::Error naming the first inconsistency: a dimension over ModelLimits, a zero dimension, hidden not a
// multiple of n_head, head_dim != hidden / n_head, n_kv_head != n_head, BLOOM with
// ffn_hidden != 4 * hidden or no_bias or clip_qkv, a non-positive or non-finite epsilon,
// alibi_bias_max or clip_qkv, or an unknown family.
void validate(const ModelConfig& config);

// Parses config.json text; source_name starts every error message
// ("config.json: n_head: expected an integer, got string").
ModelConfig parse_model_config(std::string_view json_text, std::string_view source_name = "config.json");
// Reads `path`, or path/config.json when path is a directory.
ModelConfig read_model_config(const std::filesystem::path& path);

// The config.json text for `config`, with torch_dtype naming `dtype` (F32, F16 or BF16),
// keys sorted as transformers writes them. Parses back to `config` with parse_model_config.
std::string hf_config_json(const ModelConfig& config, DType dtype);

}  // namespace vkf
