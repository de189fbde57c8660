// BLOOM (BloomForCausalLM, transformers' modeling_bloom.py): config.json keys.

#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"

namespace vkf::families {

using namespace config_keys;

ModelConfig parse_bloom(const JsonValue& root) {
    ModelConfig config{.family = ModelFamily::Bloom};
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    // Older BLOOM configs call the width n_embed; transformers lets it win over hidden_size.
    const JsonValue* n_embed = optional_key(root, "n_embed");
    const JsonValue* hidden_size = optional_key(root, "hidden_size");
    if (n_embed != nullptr && hidden_size != nullptr &&
        n_embed->as_integer<std::uint32_t>() != hidden_size->as_integer<std::uint32_t>()) {
        root.fail("n_embed " + std::to_string(n_embed->as_uint64()) + " and hidden_size " +
                  std::to_string(hidden_size->as_uint64()) + " disagree");
    }
    config.hidden = positive_dimension(required_key(root, {"n_embed", "hidden_size"}));
    config.n_layer = positive_dimension(required_key(root, {"n_layer", "num_hidden_layers"}));
    config.n_head = positive_dimension(required_key(root, {"n_head", "num_attention_heads"}));
    require_divisible(root, config.hidden, config.n_head, "hidden_size", "n_head");
    // BloomMLP is always 4h; n_inner is unused. Computed wide: 4 * 2^30 wraps in 32 bits.
    const std::uint64_t ffn = 4 * std::uint64_t{config.hidden};
    if (ffn > ModelLimits::max_ffn_hidden) {
        required_key(root, {"n_embed", "hidden_size"})
            .fail("BLOOM's MLP width 4 * " + std::to_string(config.hidden) + " = " + std::to_string(ffn) +
                  " is over vkformer's limit of " + std::to_string(ModelLimits::max_ffn_hidden));
    }
    config.ffn_hidden = static_cast<std::uint32_t>(ffn);
    if (const JsonValue* epsilon = optional_key(root, "layer_norm_epsilon")) {
        config.layer_norm_epsilon = positive_number(*epsilon);
    }
    if (const JsonValue* seq_length = optional_key(root, "seq_length")) {
        config.max_seq_len = positive_dimension(*seq_length);
    }
    config.tie_word_embeddings = bool_or(root, "tie_word_embeddings", true);
    // BloomBlock: the residual of each half is the LayerNorm's output instead of its input.
    config.post_layernorm_residual = bool_or(root, "apply_residual_connection_post_layernorm", false);
    return config;
}

nlohmann::json bloom_json(const ModelConfig& config, std::string_view torch_dtype) {
    nlohmann::json json = {
        {"apply_residual_connection_post_layernorm", config.post_layernorm_residual},
        {"architectures", {"BloomForCausalLM"}},
        {"attention_dropout", 0.0},
        {"attention_softmax_in_fp32", true},
        {"bias_dropout_fusion", true},
        {"hidden_dropout", 0.0},
        {"hidden_size", config.hidden},
        {"initializer_range", 0.02},
        {"layer_norm_epsilon", config.layer_norm_epsilon},
        {"masked_softmax_fusion", true},
        {"model_type", "bloom"},
        {"n_head", config.n_head},
        {"n_inner", nullptr},
        {"n_layer", config.n_layer},
        {"offset_alibi", 100},
        {"pretraining_tp", 1},
        {"skip_bias_add", true},
        {"skip_bias_add_qkv", false},
        {"slow_but_exact", false},
        {"torch_dtype", torch_dtype},
        {"unk_token_id", 0},
        {"use_cache", true},
        {"vocab_size", config.vocab_size},
    };
    if (config.vocab_size > 3) {
        json["pad_token_id"] = 3;
    }
    if (config.max_seq_len != 2048) {
        json["seq_length"] = config.max_seq_len;
    }
    if (!config.tie_word_embeddings) {
        json["tie_word_embeddings"] = false;
    }
    return json;
}

}  // namespace vkf::families
