// Refact-1.6B (GPTRefactForCausalLM, model_type gpt_refact, the modeling_gpt_refact.py of
// smallcloudai's repositories): config.json keys, traits, tensor names and what
// vkf-make-checkpoint --family refact writes. ALiBi (BLOOM's slopes, bias 8), multi-query
// attention (one K/V head), a SwiGLU MLP whose width no key states, RMSNorms, no biases.
//
// Its Hugging Face checkpoints store attn.q and a fused attn.kv, and the MLP's gate and up
// halves fused as mlp.gate_up_proj; the loader's slots are one fused QKV and separate gate and
// up, so host/spec/refact_layout.hpp presents them under the names below.

#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"

#include <fmt/format.h>

namespace vkf::family_defs {

using namespace config_keys;

namespace {

// LlamaMLP of modeling_gpt_refact.py (and conversion/refact.py's ff_dim): 2/3 of 4 * n_embd,
// rounded up to a multiple of 256.
std::uint64_t refact_mlp_width(std::uint64_t hidden) {
    constexpr std::uint64_t kMultipleOf = 256;
    const std::uint64_t two_thirds = 2 * (4 * hidden) / 3;
    return kMultipleOf * ((two_thirds + kMultipleOf - 1) / kMultipleOf);
}

ModelConfig parse(const JsonValue& root) {
    ModelConfig config{.family = ModelFamily::Refact};
    if (const JsonValue* multi_query = optional_key(root, "multi_query")) {
        refuse_if(!multi_query->as_bool(), *multi_query,
                  "Refact's attention is multi-query (one K/V head); multi_query false is not a Refact model");
    }
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    config.hidden = positive_dimension(required_key(root, {"n_embd"}));
    config.n_layer = positive_dimension(required_key(root, {"n_layer"}));
    config.n_head = positive_dimension(required_key(root, {"n_head"}));
    require_divisible(root, config.hidden, config.n_head, "n_embd", "n_head");
    config.n_kv_head = 1;
    const std::uint64_t width = refact_mlp_width(config.hidden);
    if (width > ModelLimits::max_ffn_hidden) {
        root.fail(fmt::format("Refact's MLP width {} (from n_embd {}) is over vkformer's limit of {}", width,
                              config.hidden, ModelLimits::max_ffn_hidden));
    }
    config.ffn_hidden = static_cast<std::uint32_t>(width);
    if (const JsonValue* epsilon = optional_key(root, "layer_norm_epsilon")) {
        config.layer_norm_epsilon = positive_number(*epsilon);
    }
    if (const JsonValue* positions = optional_key(root, "n_positions")) {
        config.max_seq_len = positive_dimension(*positions);
    }
    config.no_bias = true;
    // Refact-1.6B stores its own lm_head.weight.
    config.tie_word_embeddings = bool_or(root, "tie_word_embeddings", false);
    return config;
}

nlohmann::json write(const ModelConfig& config, std::string_view torch_dtype) {
    return {
        {"architectures", {"GPTRefactForCausalLM"}},
        {"attention_softmax_in_fp32", true},
        {"initializer_range", 0.02},
        {"layer_norm_epsilon", config.layer_norm_epsilon},
        {"model_type", "gpt_refact"},
        {"multi_query", true},
        {"n_embd", config.hidden},
        {"n_head", config.n_head},
        {"n_layer", config.n_layer},
        {"n_positions", config.max_seq_len},
        {"tie_word_embeddings", config.tie_word_embeddings},
        {"torch_dtype", torch_dtype},
        {"use_cache", true},
        {"vocab_size", config.vocab_size},
    };
}

std::string check(const ModelConfig& config) {
    if (!config.no_bias) {
        return "Refact's layers have no biases (no_bias must be set)";
    }
    if (config.n_kv_head != 1) {
        return fmt::format("Refact's attention has one K/V head, not {}", config.n_kv_head);
    }
    if (config.ffn_hidden != refact_mlp_width(config.hidden)) {
        return fmt::format("Refact's MLP width is fixed by n_embd {} ({}), not {}", config.hidden,
                           refact_mlp_width(config.hidden), config.ffn_hidden);
    }
    return {};
}

void configure(ModelConfig& config, const CheckpointOptionValues& /*options*/) {
    config.no_bias = true;
    config.n_kv_head = 1;
    config.ffn_hidden = static_cast<std::uint32_t>(refact_mlp_width(config.hidden));
    config.tie_word_embeddings = false;
}

constexpr std::string_view kModelTypes[] = {"gpt_refact"};
// Six heads: the ALiBi slopes of a head count that is not a power of two.
constexpr CheckpointVariant kVariants[] = {
    {.name = "refact", .tiny = {.n_layer = 2, .hidden = 192, .n_head = 6, .vocab_size = 512}},
};
constexpr CheckpointPreset kPresets[] = {
    {.name = "refact-1.6b",
     .shape = {.n_layer = 32, .hidden = 2048, .n_head = 32, .vocab_size = 49216},
     .note = "about 3.2 GiB in f16"},
};

constexpr FamilySpec kSpec{
    .family = ModelFamily::Refact,
    .name = "refact",
    .display_name = "Refact",
    .model_types = kModelTypes,
    .traits = {.architecture = "GPTRefactForCausalLM",
               .norm = NormKind::RmsNorm,
               .mlp = MlpKind::Gated,
               .activation = Activation::Silu,
               .interleaved_qkv = false,
               .embedding_norm = false,
               .norm_bias = false,
               .alibi_form = AlibiForm::Standard,
               .mpt_slopes = false},
    .settings = {.grouped_query = true, .no_bias = true},
    // attn.qkv, mlp.gate_proj and mlp.up_proj are the slots' names; a Hugging Face checkpoint's
    // attn.q + attn.kv and mlp.gate_up_proj are presented under them (refact_layout.hpp).
    .tensors = {.embedding = "wte",
                .layer_prefix = "h.",
                .attn_norm = "ln_1",
                .qkv = "attn.qkv",
                .attn_out = "attn.c_proj",
                .mlp_norm = "ln_2",
                .up = "mlp.up_proj",
                .gate = "mlp.gate_proj",
                .down = "mlp.c_proj",
                .final_norm = "ln_f"},
    .parse = parse,
    .write = write,
    .check = check,
    .writer = {.variants = kVariants, .presets = kPresets, .configure = configure},
};

}  // namespace

const FamilySpec& refact() {
    return kSpec;
}

}  // namespace vkf::family_defs
