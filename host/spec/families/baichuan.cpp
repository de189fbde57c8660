// Baichuan-13B and Baichuan2-13B (BaichuanForCausalLM, the modeling_baichuan.py of their
// Hugging Face repositories): config.json keys. The 7B models of both generations use rotary
// positions; their configs state max_position_embeddings, the 13B ones do not. Also its
// traits, tensor names and what vkf-make-checkpoint --family baichuan and baichuan2 write.

#include "base/error.hpp"
#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"

#include <fmt/format.h>

namespace vkf::family_defs {

using namespace config_keys;

namespace {

// Every Baichuan2 model has this vocabulary (Baichuan 1 has 64000); Baichuan2's modeling
// code differs from Baichuan 1's in the NormHead, which no config key states.
constexpr std::uint32_t kBaichuan2Vocabulary = 125696;

ModelConfig parse(const JsonValue& root) {
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

nlohmann::json write(const ModelConfig& config, std::string_view torch_dtype) {
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

std::string check(const ModelConfig& config) {
    return config.no_bias ? std::string() : "Baichuan's layers have no biases (no_bias must be set)";
}

void configure(ModelConfig& config, const CheckpointOptionValues& /*options*/) {
    config.no_bias = true;
    config.layer_norm_epsilon = 1e-6;
    config.tie_word_embeddings = false;
    config.normalized_lm_head = config.vocab_size == kBaichuan2Vocabulary;
}

void check_baichuan2(const ModelConfig& config) {
    if (config.vocab_size != kBaichuan2Vocabulary) {
        throw Error(fmt::format(
            "Baichuan2 is recognized by its vocabulary of {} (its NormHead); --vocab {} would make a Baichuan 1 model",
            kBaichuan2Vocabulary, config.vocab_size));
    }
}

constexpr std::string_view kModelTypes[] = {"baichuan"};
constexpr CheckpointVariant kVariants[] = {
    {.name = "baichuan", .tiny = {.n_layer = 2, .hidden = 160, .n_head = 5, .vocab_size = 512}},
    {.name = "baichuan2",
     .tiny = {.n_layer = 2, .hidden = 64, .n_head = 2, .vocab_size = kBaichuan2Vocabulary},
     .check = check_baichuan2},
};

constexpr FamilySpec kSpec{
    .family = ModelFamily::Baichuan,
    .name = "baichuan",
    .display_name = "Baichuan",
    .model_types = kModelTypes,
    .traits = {.architecture = "BaichuanForCausalLM",
               .norm = NormKind::RmsNorm,
               .mlp = MlpKind::Gated,
               .activation = Activation::Silu,
               .interleaved_qkv = false,
               .embedding_norm = false,
               .norm_bias = false,
               .alibi_form = AlibiForm::Standard,
               .mpt_slopes = false},
    .settings = {.normalized_lm_head = true, .no_bias = true},
    .tensors = {.embedding = "model.embed_tokens",
                .layer_prefix = "model.layers.",
                .attn_norm = "input_layernorm",
                .qkv = "self_attn.W_pack",
                .attn_out = "self_attn.o_proj",
                .mlp_norm = "post_attention_layernorm",
                .up = "mlp.up_proj",
                .gate = "mlp.gate_proj",
                .down = "mlp.down_proj",
                .final_norm = "model.norm"},
    .parse = parse,
    .write = write,
    .check = check,
    .writer = {.variants = kVariants, .configure = configure},
};

}  // namespace

const FamilySpec& baichuan() {
    return kSpec;
}

}  // namespace vkf::family_defs
