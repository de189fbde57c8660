// Baichuan-13B and Baichuan2-13B (BaichuanForCausalLM, the modeling_baichuan.py of their
// Hugging Face repositories): config.json keys. The 7B models of both generations use rotary
// positions; their configs state max_position_embeddings, the 13B ones do not.

#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"

namespace vkf::families {

using namespace config_keys;

namespace {

// Every Baichuan2 model has this vocabulary (Baichuan 1 has 64000); Baichuan2's modeling
// code differs from Baichuan 1's in the NormHead, which no config key states.
constexpr std::uint32_t kBaichuan2Vocabulary = 125696;

}  // namespace

ModelConfig parse_baichuan(const JsonValue& root) {
    ModelConfig config{.family = ModelFamily::Baichuan};
    if (const JsonValue* rotary = optional_key(root, "max_position_embeddings")) {
        rotary->fail(
            "Baichuan models with max_position_embeddings are the 7B ones, which use rotary positions; vkformer runs "
            "the ALiBi Baichuan-13B and Baichuan2-13B");
    }
    require_string(root, "hidden_act", "silu", "Baichuan's MLP is SwiGLU");
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    config.hidden = positive_dimension(required_key(root, {"hidden_size"}));
    config.n_layer = positive_dimension(required_key(root, {"num_hidden_layers"}));
    config.n_head = positive_dimension(required_key(root, {"num_attention_heads"}));
    require_divisible(root, config.hidden, config.n_head, "hidden_size", "num_attention_heads");
    config.ffn_hidden = positive_dimension(required_key(root, {"intermediate_size"}));
    config.layer_norm_epsilon = 1e-6;
    if (const JsonValue* epsilon = optional_key(root, "rms_norm_eps")) {
        config.layer_norm_epsilon = positive_number(*epsilon);
    }
    config.max_seq_len = 4096;
    if (const JsonValue* length = optional_key(root, "model_max_length")) {
        config.max_seq_len = positive_dimension(*length);
    }
    config.no_bias = true;
    config.tie_word_embeddings = bool_or(root, "tie_word_embeddings", false);
    config.normalized_lm_head = config.vocab_size == kBaichuan2Vocabulary;
    if (config.normalized_lm_head && config.tie_word_embeddings) {
        root.at("tie_word_embeddings")
            .fail(
                "Baichuan2's normalized LM head cannot share the embedding matrix (it would normalize the embeddings "
                "too)");
    }
    return config;
}

nlohmann::json baichuan_json(const ModelConfig& config, std::string_view torch_dtype) {
    nlohmann::json json = {
        {"architectures", {"BaichuanForCausalLM"}},
        {"hidden_act", "silu"},
        {"hidden_size", config.hidden},
        {"initializer_range", 0.02},
        {"intermediate_size", config.ffn_hidden},
        {"model_max_length", config.max_seq_len},
        {"model_type", "baichuan"},
        {"num_attention_heads", config.n_head},
        {"num_hidden_layers", config.n_layer},
        {"rms_norm_eps", config.layer_norm_epsilon},
        {"tie_word_embeddings", config.tie_word_embeddings},
        {"torch_dtype", torch_dtype},
        {"use_cache", true},
        {"vocab_size", config.vocab_size},
    };
    if (config.normalized_lm_head) {
        json["z_loss_weight"] = 0;
    }
    return json;
}

}  // namespace vkf::families
