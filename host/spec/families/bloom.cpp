// BLOOM (BloomForCausalLM, transformers' modeling_bloom.py): config.json keys, traits,
// tensor names and what vkf-make-checkpoint --family bloom writes.

#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"

#include <fmt/format.h>

namespace vkf::family_defs {

using namespace config_keys;

namespace {

ModelConfig parse(const JsonValue& root) {
    ModelConfig config{.family = ModelFamily::Bloom};
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    // Older BLOOM configs call the width n_embed; transformers lets it win over hidden_size.
    const JsonValue* n_embed = optional_key(root, "n_embed");
    const JsonValue* hidden_size = optional_key(root, "hidden_size");
    if (n_embed != nullptr && hidden_size != nullptr &&
        n_embed->as_integer<std::uint32_t>() != hidden_size->as_integer<std::uint32_t>()) {
        root.fail("n_embed " + fmt::to_string(n_embed->as_uint64()) + " and hidden_size " +
                  fmt::to_string(hidden_size->as_uint64()) + " disagree");
    }
    config.hidden = positive_dimension(required_key(root, {"n_embed", "hidden_size"}));
    config.n_layer = positive_dimension(required_key(root, {"n_layer", "num_hidden_layers"}));
    config.n_head = positive_dimension(required_key(root, {"n_head", "num_attention_heads"}));
    require_divisible(root, config.hidden, config.n_head, "hidden_size", "n_head");
    // BloomMLP is always 4h; n_inner is unused. Computed wide: 4 * 2^30 wraps in 32 bits.
    const std::uint64_t ffn = 4 * std::uint64_t{config.hidden};
    if (ffn > ModelLimits::max_ffn_hidden) {
        required_key(root, {"n_embed", "hidden_size"})
            .fail("BLOOM's MLP width 4 * " + fmt::to_string(config.hidden) + " = " + fmt::to_string(ffn) +
                  " is over vkformer's limit of " + fmt::to_string(ModelLimits::max_ffn_hidden));
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

nlohmann::json write(const ModelConfig& config, std::string_view torch_dtype) {
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

std::string check(const ModelConfig& config) {
    if (std::uint64_t{config.ffn_hidden} != 4 * std::uint64_t{config.hidden}) {
        return "ffn_hidden " + fmt::to_string(config.ffn_hidden) + " is not 4 * hidden (BLOOM's MLP is 4h)";
    }
    return {};
}

void configure(ModelConfig& config, const CheckpointOptionValues& options) {
    config.post_layernorm_residual = options.given("--post-ln");
}

constexpr std::string_view kModelTypes[] = {"bloom"};
constexpr CheckpointVariant kVariants[] = {
    {.name = "bloom", .tiny = {.n_layer = 2, .hidden = 64, .n_head = 2, .vocab_size = 512}},
};
constexpr CheckpointPreset kPresets[] = {
    {.name = "bloom-560m",
     .shape = {.n_layer = 24, .hidden = 1024, .n_head = 16, .vocab_size = 250880},
     .note = "about 1 GiB in f16"},
};
constexpr CheckpointOption kOptions[] = {
    {.flag = "--post-ln", .help = "apply_residual_connection_post_layernorm: residuals after the LayerNorm"},
};

constexpr FamilySpec kSpec{
    .family = ModelFamily::Bloom,
    .name = "bloom",
    .display_name = "BLOOM",
    .model_types = kModelTypes,
    .traits = {.architecture = "BloomForCausalLM",
               .norm = NormKind::LayerNorm,
               .mlp = MlpKind::Plain,
               .activation = Activation::GeluTanh,
               .interleaved_qkv = true,
               .embedding_norm = true,
               .norm_bias = true,
               .alibi_form = AlibiForm::Standard,
               .mpt_slopes = false},
    .settings = {.post_layernorm_residual = true},
    .tensors = {.embedding = "word_embeddings",
                .embedding_norm = "word_embeddings_layernorm",
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
    .check = check,
    .writer = {.variants = kVariants, .presets = kPresets, .options = kOptions, .configure = configure},
};

}  // namespace

const FamilySpec& bloom() {
    return kSpec;
}

}  // namespace vkf::family_defs
