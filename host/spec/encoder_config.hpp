#pragma once
// ALiBi encoders: the shape of a JinaBERT model (jina-embeddings-v2; Hugging Face model_type
// "bert" with position_embedding_type "alibi", the code of jinaai/jina-bert-implementation),
// read from its config.json, and the tensors its checkpoint holds. Settings the encoder
// cannot run faithfully (learned positions, another MLP, a decoder) are refused naming the
// key, as for the decoders (model_config.hpp).
//
// The forward pass (host/reference/encoder.hpp has it in full): word_embeddings +
// token_type_embeddings[0] -> embeddings.LayerNorm; per layer: separate query, key, value
// (with biases), bidirectional attention with the symmetric ALiBi bias -slope_h |i - j|,
// attention.output.dense + residual -> attention.output.LayerNorm; mlp.gated_layers (no bias)
// -> GELU(first half) * second half -> mlp.wo + residual -> mlp.layernorm.

#include "host/spec/model_tensors.hpp"
#include "host/util/dtype.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

class ShardedCheckpoint;

enum class EncoderFamily { JinaBert };

// "jina-bert".
std::string_view encoder_family_name(EncoderFamily family);

struct EncoderConfig {
    EncoderFamily family = EncoderFamily::JinaBert;
    std::uint32_t vocab_size = 0;
    std::uint32_t hidden = 0;  // hidden_size
    std::uint32_t n_layer = 0;
    std::uint32_t n_head = 0;
    std::uint32_t head_dim = 0;      // hidden / n_head
    std::uint32_t intermediate = 0;  // intermediate_size: each half of gated_layers' output
    std::uint32_t type_vocab_size = 2;
    // The longest sequence the model was trained for (ALiBi runs longer ones; vkf-embed warns).
    std::uint32_t max_position_embeddings = 8192;
    double layer_norm_eps = 1e-12;

    bool operator==(const EncoderConfig&) const = default;
};

// Bounds checked before anything is derived from a config's sizes; the same reasoning as
// ModelLimits (far beyond jina-embeddings-v2-large: 24 layers, width 1024, vocab 61056).
struct EncoderLimits {
    static constexpr std::uint32_t max_layers = 1024;
    static constexpr std::uint32_t max_hidden = 1u << 17;
    static constexpr std::uint32_t max_heads = 4096;
    static constexpr std::uint32_t max_intermediate = 1u << 20;
    static constexpr std::uint32_t max_vocab = 1u << 24;
    static constexpr std::uint32_t max_type_vocab = 1u << 16;
    static constexpr std::uint32_t max_positions = 1u << 24;
};

// Throws vkf::Error naming the first problem: a zero dimension, one over EncoderLimits,
// hidden not a multiple of n_head, head_dim != hidden / n_head, a non-positive or
// non-finite epsilon.
void validate(const EncoderConfig& config);

// Parses config.json text; source_name starts every error message. Refused by key:
// model_type other than "bert"; position_embedding_type other than "alibi" (absent means
// BERT's "absolute"); feed_forward_type other than "geglu" (absent means JinaBertConfig's
// default "original", a plain MLP with other tensors); hidden_act other than "gelu";
// emb_pooler other than "mean" or null; is_decoder or add_cross_attention true;
// alibi_scaling other than 1; an auto_map into a QK-normalized variant (qk-post-norm).
EncoderConfig parse_encoder_config(std::string_view json_text, std::string_view source_name = "config.json");
// Reads `path`, or path/config.json when path is a directory; a llama.cpp `jina-bert-v2`
// GGUF file gives the configuration its metadata describes (gguf_checkpoint.hpp).
EncoderConfig read_encoder_config(const std::filesystem::path& path);

// Whether config.json text names an ALiBi encoder (model_type "bert"), so that a program
// can tell encoders from decoders before parsing either. Throws for text that is not JSON.
bool is_encoder_config(std::string_view json_text, std::string_view source_name = "config.json");

// The config.json of a jina-embeddings-v2 model of this shape (keys sorted, torch_dtype
// naming dtype: F32, F16 or BF16). Parses back to `config`.
std::string encoder_hf_config_json(const EncoderConfig& config, DType dtype);

// Every tensor the encoder reads, in the order of the forward pass, named as in
// JinaBertModel's checkpoints ("embeddings.word_embeddings.weight", ...). JinaBertForMaskedLM
// checkpoints store the same under "bert." (encoder_tensor_name finds either); their MLM
// head and the BERT pooler are not read.
std::vector<ExpectedTensor> expected_encoder_tensors(const EncoderConfig& config);

inline constexpr std::string_view kBertPrefix = "bert.";

// The name `name` is stored under in `checkpoint`: as it is, or with the "bert." prefix.
// Empty when neither is there.
std::string encoder_tensor_name(const ShardedCheckpoint& checkpoint, std::string_view name);

// Checks that every expected tensor is present (with or without "bert.") with its shape and
// a dtype vkformer reads (F32, F16, BF16). Throws one vkf::Error listing the problems, each
// naming the file and the tensor (a block-quantized checkpoint's U8 planes among them:
// vkf-quantize writes decoders only).
void check_encoder_checkpoint(const ShardedCheckpoint& checkpoint, const EncoderConfig& config);

}  // namespace vkf
