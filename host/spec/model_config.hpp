#pragma once
// The shape of a model, read from a Hugging Face config.json. The ALiBi decoder families:
//   BLOOM    (model_type "bloom",    BloomForCausalLM)
//   MPT      (model_type "mpt",      MPTForCausalLM, llm-foundry)
//   Falcon   (model_type "falcon",   FalconForCausalLM with alibi true: Falcon-RW)
//   Baichuan (model_type "baichuan", BaichuanForCausalLM: Baichuan-13B and Baichuan2-13B)
//   Jais     (model_type "jais",     JAISLMHeadModel)
// Each key a family's modeling code reads is either honoured or, where vkformer cannot run
// it faithfully (rotary positions, prefix-LM masks, parallel attention, ...), refused with
// an error naming the key, rather than run with silently wrong numerics. docs/FORMATS.md has the
// table.

#include "host/spec/activation.hpp"
#include "host/util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

enum class ModelFamily { Bloom, Mpt, Falcon, Baichuan, Jais, Refact };

// "bloom", "mpt", "falcon", "baichuan", "jais", "refact": the family's name.
std::string_view family_name(ModelFamily family);

struct ModelConfig {
    ModelFamily family = ModelFamily::Bloom;
    std::uint32_t vocab_size = 0;
    std::uint32_t hidden = 0;  // BLOOM hidden_size (or n_embed), MPT d_model, Jais n_embd
    std::uint32_t n_layer = 0;
    std::uint32_t n_head = 0;
    std::uint32_t n_kv_head = 0;       // MPT attn_config.kv_n_heads (grouped-query); n_head elsewhere
    std::uint32_t head_dim = 0;        // hidden / n_head
    std::uint32_t ffn_hidden = 0;      // BLOOM 4 * hidden; MPT expansion_ratio * d_model; ...
    double layer_norm_epsilon = 1e-5;  // Baichuan: rms_norm_eps (its norms are RMSNorms)
    bool alibi = true;                 // MPT attn_config.alibi; every other family always
    double alibi_bias_max = 8.0;       // MPT attn_config.alibi_bias_max; 8 elsewhere
    // Jais alibi_scaling: slopes divided by a fixed factor, or (train_seq_len) by
    // L / train_seq_len whenever the key count L passes the training length.
    double alibi_scaling_factor = 1.0;
    std::optional<std::uint32_t> alibi_train_seq_len = std::nullopt;
    // The factor of q.k; unset: 1/sqrt(head_dim). MPT softmax_scale; Jais 1/head_dim
    // (mup_scale_qk_dot_by_d) or 1 (scale_attn_weights false).
    std::optional<double> softmax_scale = std::nullopt;
    // No bias in any linear layer (MPT no_bias also drops the LayerNorms' biases; Falcon
    // "bias": false only the linear layers'; Baichuan has none anywhere).
    bool no_bias = false;
    std::optional<double> clip_qkv = std::nullopt;     // MPT: clamp Wqkv's output to [-c, c]
    bool qk_ln = false;                                // MPT: LayerNorms on Q and on K
    bool learned_pos_emb = false;                      // MPT: wpe [max_seq_len, d_model] added
    bool post_layernorm_residual = false;              // BLOOM apply_residual_connection_post_layernorm
    std::optional<double> logit_scale = std::nullopt;  // MPT logit_scale; Jais mup_output_alpha * mup_width_scale
    double embedding_scale = 1.0;                      // Jais mup_embeddings_scale
    bool normalized_lm_head = false;                   // Baichuan2's NormHead: rows L2-normalized
    // MPT attn_config.sliding_window_size W (-1: 0, full attention): a query sees the W keys
    // before it (AttentionParams::window); --window overrides it.
    std::uint32_t attention_window = 0;
    std::uint32_t max_seq_len = 2048;  // BLOOM seq_length (2048 when absent); MPT max_seq_len; ...
    bool tie_word_embeddings = true;   // lm_head shares the token embedding matrix
    // config.json's bos_token_id, and eos_token_id (an integer or a list: generation stops at
    // any of them). Absent or null: none.
    std::optional<std::uint32_t> bos_token_id = std::nullopt;
    std::vector<std::uint32_t> eos_token_ids = {};

    bool operator==(const ModelConfig&) const = default;
};

// What a family's code fixes rather than its config: derived from ModelConfig::family.
enum class NormKind { LayerNorm, RmsNorm };
enum class MlpKind { Plain, Gated };  // down(act(up(x))) or down(act(gate(x)) * up(x))
enum class AlibiForm {
    Standard,  // softmax(scale * q.k + slope * (j - i))
    // Falcon: softmax(scale * (q.k + bf16(bf16(slope) * j))): the bias is added before the
    // scale and rounded to bfloat16 as Hugging Face's build_alibi_tensor does.
    FalconBf16,
};
struct FamilyTraits {
    std::string_view architecture;  // the Hugging Face architectures[0]
    NormKind norm;
    MlpKind mlp;
    Activation activation;  // of the plain MLP, or the gate's
    bool interleaved_qkv;   // fused QKV output [n_head, 3, head_dim] (else [q | k | v])
    bool embedding_norm;    // a LayerNorm right after the embedding (BLOOM)
    bool norm_bias;         // LayerNorms carry a bias (unless MPT's no_bias)
    AlibiForm alibi_form;
    bool mpt_slopes;  // MPT's gen_slopes order (else the paper's, as BLOOM builds them)
};
FamilyTraits family_traits(ModelFamily family);

// Whether the model's linear layers and its norms carry biases.
bool has_linear_bias(const ModelConfig& config);
bool has_norm_bias(const ModelConfig& config);
// The softmax scale: softmax_scale, else 1/sqrt(head_dim).
double attention_scale(const ModelConfig& config);
// The ALiBi slope of every head as the attention kernel receives it (empty without ALiBi):
// the family's slope order, Jais' fixed alibi_scaling factor applied, Falcon's slopes
// rounded to bfloat16.
std::vector<float> model_alibi_slopes(const ModelConfig& config);

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

// Throws vkf::Error naming the first inconsistency: a dimension over ModelLimits, a zero
// dimension, hidden not a multiple of n_head, head_dim != hidden / n_head, n_head not a
// multiple of n_kv_head (or grouped-query heads in a family without them), a setting of
// another family (BLOOM with clip_qkv, ...), a non-positive or non-finite number, or an
// unknown family.
void validate(const ModelConfig& config);

// Parses config.json text; source_name starts every error message
// ("config.json: n_head: expected an integer, got string").
ModelConfig parse_model_config(std::string_view json_text, std::string_view source_name = "config.json");
// Reads `path`, or path/config.json when path is a directory; a llama.cpp GGUF file
// (host/spec/gguf_checkpoint.hpp) gives the configuration its metadata describes.
ModelConfig read_model_config(const std::filesystem::path& path);

// "float32", "float16", "bfloat16": config.json's torch_dtype for F32, F16, BF16; throws
// vkf::Error for any other dtype (torch cannot name it in a checkpoint we write).
std::string_view torch_dtype_name(DType dtype);

// The config.json text for `config`, with torch_dtype naming `dtype` (F32, F16 or BF16),
// keys sorted as transformers writes them. Parses back to `config` with parse_model_config.
std::string hf_config_json(const ModelConfig& config, DType dtype);

}  // namespace vkf
