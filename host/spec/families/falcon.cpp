// Falcon-RW (FalconForCausalLM with alibi true, transformers' modeling_falcon.py):
// config.json keys, traits, tensor names and what vkf-make-checkpoint --family falcon writes.
// The rotary Falcons (7B, 40B, 180B: alibi false, multi-query or the new
// decoder architecture, parallel attention) are refused by name.

#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"

#include <fmt/format.h>

namespace vkf::family_defs {

using namespace config_keys;

namespace {

ModelConfig parse(const JsonValue& root) {
    ModelConfig config{.family = ModelFamily::Falcon};
    const JsonValue* alibi = optional_key(root, "alibi");
    refuse_if(alibi == nullptr || !alibi->as_bool(), alibi != nullptr ? *alibi : root,
              "Falcon with rotary positions (alibi false: Falcon-7B, 40B, 180B) is not supported; vkformer runs the "
              "ALiBi Falcons (Falcon-RW, alibi true)");
    refuse_true(root, "new_decoder_architecture",
                "Falcon's new decoder architecture (grouped KV heads, parallel "
                "attention) is not supported");
    refuse_true(root, "multi_query", "multi-query Falcon attention is not supported (Falcon-RW is multi-head)");
    refuse_true(root, "parallel_attn", "parallel attention and MLP is not supported (Falcon-RW runs them in turn)");
    refuse_true(root, "apply_residual_connection_post_layernorm",
                "residuals after the LayerNorm are not supported in Falcon");
    require_string(root, "activation", "gelu", "Falcon-RW's MLP uses the exact GELU");
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    config.hidden = positive_dimension(required_key(root, {"hidden_size", "n_embed"}));
    config.n_layer = positive_dimension(required_key(root, {"num_hidden_layers", "n_layer"}));
    config.n_head = positive_dimension(required_key(root, {"num_attention_heads", "n_head"}));
    require_divisible(root, config.hidden, config.n_head, "hidden_size", "num_attention_heads");
    const std::uint64_t ffn = 4 * std::uint64_t{config.hidden};
    if (const JsonValue* size = optional_key(root, "ffn_hidden_size")) {
        config.ffn_hidden = positive_dimension(*size);
    } else if (ffn > ModelLimits::max_ffn_hidden) {
        root.fail("Falcon's MLP width 4 * " + fmt::to_string(config.hidden) + " is over vkformer's limit of " +
                  fmt::to_string(ModelLimits::max_ffn_hidden));
    } else {
        config.ffn_hidden = static_cast<std::uint32_t>(ffn);
    }
    if (const JsonValue* epsilon = optional_key(root, "layer_norm_epsilon")) {
        config.layer_norm_epsilon = positive_number(*epsilon);
    }
    if (const JsonValue* max_positions = optional_key(root, "max_position_embeddings")) {
        config.max_seq_len = positive_dimension(*max_positions);
    }
    // FalconConfig's bias defaults to false; Falcon-RW's configs say true.
    config.no_bias = !bool_or(root, "bias", false);
    config.tie_word_embeddings = bool_or(root, "tie_word_embeddings", true);
    return config;
}

nlohmann::json write(const ModelConfig& config, std::string_view torch_dtype) {
    nlohmann::json json = {
        {"alibi", true},
        {"apply_residual_connection_post_layernorm", false},
        {"architectures", {"FalconForCausalLM"}},
        {"attention_dropout", 0.0},
        {"bias", !config.no_bias},
        {"hidden_dropout", 0.0},
        {"hidden_size", config.hidden},
        {"initializer_range", 0.02},
        {"layer_norm_epsilon", config.layer_norm_epsilon},
        {"max_position_embeddings", config.max_seq_len},
        {"model_type", "falcon"},
        {"multi_query", false},
        {"new_decoder_architecture", false},
        {"num_attention_heads", config.n_head},
        {"num_hidden_layers", config.n_layer},
        {"parallel_attn", false},
        {"torch_dtype", torch_dtype},
        {"use_cache", true},
        {"vocab_size", config.vocab_size},
    };
    if (std::uint64_t{config.ffn_hidden} != 4 * std::uint64_t{config.hidden}) {
        json["ffn_hidden_size"] = config.ffn_hidden;
    }
    if (!config.tie_word_embeddings) {
        json["tie_word_embeddings"] = false;
    }
    return json;
}

constexpr std::string_view kModelTypes[] = {"falcon", "RefinedWebModel", "RefinedWeb"};
constexpr CheckpointVariant kVariants[] = {
    {.name = "falcon", .tiny = {.n_layer = 2, .hidden = 96, .n_head = 3, .vocab_size = 512}},
};

// vkf-make-checkpoint --family falcon: Falcon-RW, biases everywhere (no settings of its own).
constexpr FamilySpec kSpec{
    .family = ModelFamily::Falcon,
    .name = "falcon",
    .display_name = "Falcon",
    .model_types = kModelTypes,
    .traits = {.architecture = "FalconForCausalLM",
               .norm = NormKind::LayerNorm,
               .mlp = MlpKind::Plain,
               .activation = Activation::GeluErf,
               .interleaved_qkv = true,
               .embedding_norm = false,
               .norm_bias = true,
               .alibi_form = AlibiForm::FalconBf16,
               .mpt_slopes = false},
    // "bias": false drops only the linear layers' biases.
    .no_bias_drops_norm_bias = false,
    .settings = {.no_bias = true},
    .tensors = {.embedding = "word_embeddings",
                .layer_prefix = "h.",
                .attn_norm = "input_layernorm",
                .qkv = "self_attention.query_key_value",
                .attn_out = "self_attention.dense",
                .mlp_norm = "post_attention_layernorm",
                .up = "mlp.dense_h_to_4h",
                .down = "mlp.dense_4h_to_h",
                .final_norm = "ln_f"},
    .parse = parse,
    .write = write,
    .writer = {.variants = kVariants},
};

}  // namespace

const FamilySpec& falcon() {
    return kSpec;
}

}  // namespace vkf::family_defs
