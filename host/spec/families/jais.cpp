// Jais (JAISLMHeadModel, the modeling_jais.py of its Hugging Face repositories): config.json
// keys, muP multipliers and alibi_scaling included; its traits, tensor names and what
// vkf-make-checkpoint --family jais writes.

#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"

#include <cmath>

namespace vkf::family_defs {

using namespace config_keys;

namespace {

double number_or(const JsonValue& root, std::initializer_list<std::string_view> keys, double fallback) {
    for (std::string_view key : keys) {
        if (const JsonValue* value = optional_key(root, key)) {
            const double number = value->as_double();
            refuse_if(!std::isfinite(number), *value, "must be a finite number");
            return number;
        }
    }
    return fallback;
}

void read_alibi_scaling(const JsonValue& scaling, ModelConfig& config) {
    scaling.as_object();
    require_string(scaling, "type", "linear", "only linear alibi_scaling");
    const JsonValue* factor = optional_key(scaling, "factor");
    const JsonValue* train = optional_key(scaling, "train_seq_len");
    refuse_if((factor == nullptr) == (train == nullptr), scaling, "needs exactly one of 'factor' and 'train_seq_len'");
    if (factor != nullptr) {
        const double f = factor->as_double();
        refuse_if(!(f > 1.0) || !std::isfinite(f), *factor, "must be a number > 1 (as JAISConfig checks)");
        config.alibi_scaling_factor = f;
    } else {
        const auto length = train->as_integer<std::uint32_t>();
        refuse_if(length <= 1, *train, "must be an integer > 1 (as JAISConfig checks)");
        config.alibi_train_seq_len = length;
    }
}

ModelConfig parse(const JsonValue& root) {
    ModelConfig config{.family = ModelFamily::Jais};
    require_string(root, "position_embedding_type", "alibi", "vkformer runs the ALiBi Jais models");
    if (optional_key(root, "position_embedding_type") == nullptr) {
        root.fail(
            "missing key 'position_embedding_type' (JAISConfig's default is learned positions, which vkformer "
            "does not run)");
    }
    require_string(root, "activation_function", "swiglu", "Jais' MLP is SwiGLU");
    refuse_true(root, "scale_attn_by_inverse_layer_idx", "per-layer attention scaling is not supported");
    refuse_true(root, "add_cross_attention", "cross-attention is not supported (decoder only)");
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    config.hidden = positive_dimension(required_key(root, {"n_embd", "hidden_size"}));
    config.n_layer = positive_dimension(required_key(root, {"n_layer", "num_hidden_layers"}));
    config.n_head = positive_dimension(required_key(root, {"n_head", "num_attention_heads"}));
    require_divisible(root, config.hidden, config.n_head, "n_embd", "n_head");
    if (const JsonValue* inner = optional_key(root, "n_inner")) {
        config.ffn_hidden = positive_dimension(*inner);
    } else if (4 * std::uint64_t{config.hidden} > ModelLimits::max_ffn_hidden) {
        root.fail("Jais' MLP width 4 * n_embd is over vkformer's limit");
    } else {
        config.ffn_hidden = 4 * config.hidden;
    }
    if (const JsonValue* epsilon = optional_key(root, "layer_norm_epsilon")) {
        config.layer_norm_epsilon = positive_number(*epsilon);
    }
    config.max_seq_len = 1024;
    if (const JsonValue* positions = optional_key(root, "n_positions")) {
        config.max_seq_len = positive_dimension(*positions);
    }
    // JAISAttention divides q.k by head_dim ** attn_scale_power: 1 with mup_scale_qk_dot_by_d,
    // 0.5 otherwise; not at all without scale_attn_weights.
    const bool by_d = bool_or(root, "mup_scale_qk_dot_by_d", bool_or(root, "scale_qk_dot_by_d", false));
    const std::uint32_t head_dim = config.hidden / config.n_head;
    if (!bool_or(root, "scale_attn_weights", true)) {
        config.softmax_scale = 1.0;
    } else if (by_d) {
        config.softmax_scale = 1.0 / head_dim;
    }
    config.embedding_scale = number_or(root, {"embeddings_scale", "mup_embeddings_scale"}, 1.0);
    const double output_scale =
        optional_key(root, "width_scale") != nullptr
            ? number_or(root, {"width_scale"}, 1.0)
            : number_or(root, {"mup_output_alpha"}, 1.0) * number_or(root, {"mup_width_scale"}, 1.0);
    if (output_scale != 1.0) {
        config.logit_scale = output_scale;
    }
    if (const JsonValue* scaling = optional_key(root, "alibi_scaling")) {
        read_alibi_scaling(*scaling, config);
    }
    config.tie_word_embeddings = bool_or(root, "tie_word_embeddings", true);
    return config;
}

nlohmann::json write(const ModelConfig& config, std::string_view torch_dtype) {
    const std::uint32_t head_dim = config.hidden / config.n_head;
    nlohmann::json json = {
        {"activation_function", "swiglu"},
        {"architectures", {"JAISLMHeadModel"}},
        {"attn_pdrop", 0.0},
        {"embd_pdrop", 0.0},
        {"initializer_range", 0.02},
        {"layer_norm_epsilon", config.layer_norm_epsilon},
        {"model_type", "jais"},
        {"mup_embeddings_scale", config.embedding_scale},
        {"mup_output_alpha", config.logit_scale.value_or(1.0)},
        {"mup_scale_qk_dot_by_d", config.softmax_scale && *config.softmax_scale == 1.0 / head_dim},
        {"mup_width_scale", 1.0},
        {"n_embd", config.hidden},
        {"n_head", config.n_head},
        {"n_inner", config.ffn_hidden},
        {"n_layer", config.n_layer},
        {"n_positions", config.max_seq_len},
        {"position_embedding_type", "alibi"},
        {"reorder_and_upcast_attn", false},
        {"resid_pdrop", 0.0},
        {"scale_attn_by_inverse_layer_idx", false},
        {"scale_attn_weights", !(config.softmax_scale && *config.softmax_scale == 1.0 && head_dim != 1)},
        {"torch_dtype", torch_dtype},
        {"use_cache", true},
        {"vocab_size", config.vocab_size},
    };
    if (config.alibi_train_seq_len) {
        json["alibi_scaling"] = {{"type", "linear"}, {"train_seq_len", *config.alibi_train_seq_len}};
    } else if (config.alibi_scaling_factor != 1.0) {
        json["alibi_scaling"] = {{"type", "linear"}, {"factor", config.alibi_scaling_factor}};
    } else {
        json["alibi_scaling"] = nullptr;
    }
    if (!config.tie_word_embeddings) {
        json["tie_word_embeddings"] = false;
    }
    return json;
}

std::string check(const ModelConfig& config) {
    if (config.softmax_scale && *config.softmax_scale != 1.0 / config.head_dim && *config.softmax_scale != 1.0) {
        return "Jais divides q.k by head_dim, sqrt(head_dim) or nothing";
    }
    return {};
}

void configure(ModelConfig& config, const CheckpointOptionValues& options) {
    // jais-13b's muP settings: q.k / head size, embeddings times 14.6, logits times
    // mup_output_alpha 2.22 * mup_width_scale 0.0625.
    config.softmax_scale = 1.0 / config.head_dim;
    config.embedding_scale = 14.6;
    config.logit_scale = 2.22 * 0.0625;
    config.alibi_train_seq_len = options.count("--alibi-train-len");
    config.alibi_scaling_factor = options.number("--alibi-factor").value_or(1.0);
}

constexpr std::string_view kModelTypes[] = {"jais"};
constexpr CheckpointVariant kVariants[] = {
    {.name = "jais", .tiny = {.n_layer = 2, .hidden = 96, .n_head = 3, .vocab_size = 512}},
};
constexpr CheckpointOption kOptions[] = {
    {.flag = "--alibi-train-len",
     .kind = CheckpointOption::Kind::Count,
     .value_name = "N",
     .min = 2,
     .help = "alibi_scaling {train_seq_len: N}: slopes shrink past N keys"},
    {.flag = "--alibi-factor",
     .kind = CheckpointOption::Kind::Positive,
     .value_name = "F",
     .help = "alibi_scaling {factor: F} (F > 1)"},
};

constexpr FamilySpec kSpec{
    .family = ModelFamily::Jais,
    .name = "jais",
    .display_name = "Jais",
    .model_types = kModelTypes,
    .traits = {.architecture = "JAISLMHeadModel",
               .norm = NormKind::LayerNorm,
               .mlp = MlpKind::Gated,
               .activation = Activation::Silu,
               .interleaved_qkv = false,
               .embedding_norm = false,
               .norm_bias = true,
               .alibi_form = AlibiForm::Standard,
               .mpt_slopes = false},
    .settings = {.softmax_scale = true, .logit_scale = true, .embedding_scale = true, .alibi_scaling = true},
    .tensors = {.embedding = "wte",
                .layer_prefix = "h.",
                .attn_norm = "ln_1",
                .qkv = "attn.c_attn",
                .attn_out = "attn.c_proj",
                .mlp_norm = "ln_2",
                .up = "mlp.c_fc",
                .gate = "mlp.c_fc2",
                .down = "mlp.c_proj",
                .final_norm = "ln_f",
                .conv1d = true},
    .parse = parse,
    .write = write,
    .check = check,
    .writer = {.variants = kVariants, .options = kOptions, .configure = configure},
};

}  // namespace

const FamilySpec& jais() {
    return kSpec;
}

}  // namespace vkf::family_defs
