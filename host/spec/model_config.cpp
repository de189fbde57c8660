#include "host/spec/model_config.hpp"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <system_error>

#include "host/io/json.hpp"
#include "host/io/npy.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/alibi.hpp"
#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"
#include "host/util/half.hpp"
#include "runtime/error.hpp"

namespace vkf {
namespace {

using config_keys::optional_key;
using config_keys::required_key;

// A token id must name a row of the vocabulary: an EOS id past it would never stop generation.
std::uint32_t token_id(const JsonValue& value, const ModelConfig& config) {
    const auto id = value.as_integer<std::uint32_t>();
    if (id >= config.vocab_size) {
        value.fail("token id " + std::to_string(id) + " is not below vocab_size " + std::to_string(config.vocab_size));
    }
    return id;
}

void read_special_token_ids(const JsonValue& root, ModelConfig& config) {
    if (const JsonValue* bos = optional_key(root, "bos_token_id")) {
        config.bos_token_id = token_id(*bos, config);
    }
    if (const JsonValue* eos = optional_key(root, "eos_token_id")) {
        if (eos->is_array()) {
            for (const JsonValue& id : eos->as_array()) {
                config.eos_token_ids.push_back(token_id(id, config));
            }
        } else {
            config.eos_token_ids.push_back(token_id(*eos, config));
        }
    }
}

ModelConfig config_from_json(const JsonValue& root) {
    root.as_object();  // "expected an object, got array" for anything else
    const JsonValue& model_type = required_key(root, {"model_type"});
    const std::string& type = model_type.as_string();
    ModelConfig config;
    if (type == "bloom") {
        config = families::parse_bloom(root);
    } else if (type == "mpt") {
        config = families::parse_mpt(root);
    } else if (type == "falcon" || type == "RefinedWebModel" || type == "RefinedWeb") {
        config = families::parse_falcon(root);
    } else if (type == "baichuan") {
        config = families::parse_baichuan(root);
    } else if (type == "jais") {
        config = families::parse_jais(root);
    } else {
        model_type.fail("'" + type + "' is not supported (vkformer runs bloom, mpt, falcon, baichuan and jais)");
    }
    if (config.n_kv_head == 0) {
        config.n_kv_head = config.n_head;
    }
    config.head_dim = config.hidden / config.n_head;
    read_special_token_ids(root, config);
    try {
        validate(config);
    } catch (const Error& error) {
        root.fail(error.what());
    }
    return config;
}

}  // namespace

std::string_view family_name(ModelFamily family) {
    switch (family) {
        case ModelFamily::Bloom:
            return "bloom";
        case ModelFamily::Mpt:
            return "mpt";
        case ModelFamily::Falcon:
            return "falcon";
        case ModelFamily::Baichuan:
            return "baichuan";
        case ModelFamily::Jais:
            return "jais";
    }
    return "unknown";
}

FamilyTraits family_traits(ModelFamily family) {
    switch (family) {
        case ModelFamily::Bloom:
            return {.architecture = "BloomForCausalLM",
                    .norm = NormKind::LayerNorm,
                    .mlp = MlpKind::Plain,
                    .activation = Activation::GeluTanh,
                    .interleaved_qkv = true,
                    .embedding_norm = true,
                    .norm_bias = true,
                    .alibi_form = AlibiForm::Standard,
                    .mpt_slopes = false};
        case ModelFamily::Mpt:
            return {.architecture = "MPTForCausalLM",
                    .norm = NormKind::LayerNorm,
                    .mlp = MlpKind::Plain,
                    .activation = Activation::GeluErf,
                    .interleaved_qkv = false,
                    .embedding_norm = false,
                    .norm_bias = true,
                    .alibi_form = AlibiForm::Standard,
                    .mpt_slopes = true};
        case ModelFamily::Falcon:
            return {.architecture = "FalconForCausalLM",
                    .norm = NormKind::LayerNorm,
                    .mlp = MlpKind::Plain,
                    .activation = Activation::GeluErf,
                    .interleaved_qkv = true,
                    .embedding_norm = false,
                    .norm_bias = true,
                    .alibi_form = AlibiForm::FalconBf16,
                    .mpt_slopes = false};
        case ModelFamily::Baichuan:
            return {.architecture = "BaichuanForCausalLM",
                    .norm = NormKind::RmsNorm,
                    .mlp = MlpKind::Gated,
                    .activation = Activation::Silu,
                    .interleaved_qkv = false,
                    .embedding_norm = false,
                    .norm_bias = false,
                    .alibi_form = AlibiForm::Standard,
                    .mpt_slopes = false};
        case ModelFamily::Jais:
            return {.architecture = "JAISLMHeadModel",
                    .norm = NormKind::LayerNorm,
                    .mlp = MlpKind::Gated,
                    .activation = Activation::Silu,
                    .interleaved_qkv = false,
                    .embedding_norm = false,
                    .norm_bias = true,
                    .alibi_form = AlibiForm::Standard,
                    .mpt_slopes = false};
    }
    throw Error("model config: unknown family " + std::to_string(static_cast<int>(family)));
}

bool has_linear_bias(const ModelConfig& config) {
    return !config.no_bias;
}

bool has_norm_bias(const ModelConfig& config) {
    // MPT's no_bias drops every bias; Falcon's "bias": false only the linear layers'.
    return family_traits(config.family).norm_bias && !(config.family == ModelFamily::Mpt && config.no_bias);
}

double attention_scale(const ModelConfig& config) {
    return config.softmax_scale.value_or(1.0 / std::sqrt(static_cast<double>(config.head_dim)));
}

std::vector<float> model_alibi_slopes(const ModelConfig& config) {
    if (!config.alibi) {
        return {};
    }
    const FamilyTraits traits = family_traits(config.family);
    std::vector<float> slopes = traits.mpt_slopes ? mpt_alibi_slopes(config.n_head, config.alibi_bias_max)
                                                  : alibi_slopes(config.n_head, config.alibi_bias_max);
    for (float& slope : slopes) {
        // JAIS' AlibiPositionEmbeddingLayer divides the fp32 slopes by the factor.
        slope = static_cast<float>(slope / config.alibi_scaling_factor);
        if (traits.alibi_form == AlibiForm::FalconBf16) {
            slope = bfloat16_to_float(float_to_bfloat16(slope));  // slopes[..., None].bfloat16()
        }
    }
    return slopes;
}

void validate(const ModelConfig& config) {
    const auto fail = [&](const std::string& problem) {
        throw Error("model config (" + std::string(family_name(config.family)) + "): " + problem);
    };
    switch (config.family) {
        case ModelFamily::Bloom:
        case ModelFamily::Mpt:
        case ModelFamily::Falcon:
        case ModelFamily::Baichuan:
        case ModelFamily::Jais:
            break;
        default:
            fail("unknown family " + std::to_string(static_cast<int>(config.family)));
    }
    if (config.vocab_size == 0 || config.hidden == 0 || config.n_layer == 0 || config.n_head == 0 ||
        config.ffn_hidden == 0 || config.max_seq_len == 0) {
        fail("vocab_size, hidden, n_layer, n_head, ffn_hidden and max_seq_len must all be positive");
    }
    const auto bound = [&](std::string_view name, std::uint32_t value, std::uint32_t limit) {
        if (value > limit) {
            fail(std::string(name) + " " + std::to_string(value) + " is over vkformer's limit of " +
                 std::to_string(limit) + " (no real checkpoint comes near it)");
        }
    };
    bound("n_layer", config.n_layer, ModelLimits::max_layers);
    bound("hidden", config.hidden, ModelLimits::max_hidden);
    bound("n_head", config.n_head, ModelLimits::max_heads);
    bound("ffn_hidden", config.ffn_hidden, ModelLimits::max_ffn_hidden);
    bound("vocab_size", config.vocab_size, ModelLimits::max_vocab);
    bound("max_seq_len", config.max_seq_len, ModelLimits::max_seq_len);
    if (config.hidden % config.n_head != 0) {
        fail("hidden " + std::to_string(config.hidden) + " is not a multiple of n_head " +
             std::to_string(config.n_head));
    }
    if (config.head_dim != config.hidden / config.n_head) {
        fail("head_dim " + std::to_string(config.head_dim) +
             " is not hidden / n_head = " + std::to_string(config.hidden / config.n_head));
    }
    if (config.n_kv_head == 0 || config.n_head % config.n_kv_head != 0) {
        fail("n_head " + std::to_string(config.n_head) + " is not a multiple of n_kv_head " +
             std::to_string(config.n_kv_head));
    }
    const bool mpt = config.family == ModelFamily::Mpt;
    const bool jais = config.family == ModelFamily::Jais;
    // Settings only some families' modeling code has.
    const auto only = [&](bool set, bool allowed, std::string_view what) {
        if (set && !allowed) {
            fail(std::string(what) + " is not a setting of " + std::string(family_name(config.family)) + " models");
        }
    };
    only(config.n_kv_head != config.n_head, mpt, "grouped-query attention (n_kv_head != n_head)");
    only(config.clip_qkv.has_value(), mpt, "clip_qkv");
    only(config.qk_ln, mpt, "qk_ln");
    only(config.learned_pos_emb, mpt, "learned_pos_emb");
    only(!config.alibi, mpt, "attention without ALiBi");
    only(config.alibi_bias_max != 8.0, mpt, "alibi_bias_max other than 8");
    only(config.softmax_scale.has_value(), mpt || jais, "a softmax scale other than 1/sqrt(head_dim)");
    only(config.logit_scale.has_value(), mpt || jais, "logit_scale");
    only(config.embedding_scale != 1.0, jais, "an embedding scale");
    only(config.alibi_scaling_factor != 1.0 || config.alibi_train_seq_len.has_value(), jais, "alibi_scaling");
    only(config.post_layernorm_residual, config.family == ModelFamily::Bloom,
         "residuals after the LayerNorm (apply_residual_connection_post_layernorm)");
    only(config.normalized_lm_head, config.family == ModelFamily::Baichuan, "a normalized LM head");
    only(config.no_bias, mpt || config.family == ModelFamily::Falcon || config.family == ModelFamily::Baichuan,
         "no_bias");
    if (config.family == ModelFamily::Baichuan && !config.no_bias) {
        fail("Baichuan's layers have no biases (no_bias must be set)");
    }
    if (config.family == ModelFamily::Bloom && std::uint64_t{config.ffn_hidden} != 4 * std::uint64_t{config.hidden}) {
        fail("ffn_hidden " + std::to_string(config.ffn_hidden) + " is not 4 * hidden (BLOOM's MLP is 4h)");
    }
    if (config.normalized_lm_head && config.tie_word_embeddings) {
        fail("a normalized LM head cannot be tied to the embedding");
    }
    if (jais && config.softmax_scale && *config.softmax_scale != 1.0 / config.head_dim &&
        *config.softmax_scale != 1.0) {
        fail("Jais divides q.k by head_dim, sqrt(head_dim) or nothing");
    }
    const auto positive = [&](double value, std::string_view what) {
        if (!(value > 0.0) || !std::isfinite(value)) {
            fail(std::string(what) + " must be positive and finite");
        }
    };
    positive(config.layer_norm_epsilon, "layer_norm_epsilon");
    positive(config.alibi_bias_max, "alibi_bias_max");
    positive(config.alibi_scaling_factor, "the alibi_scaling factor");
    if (config.alibi_scaling_factor < 1.0) {
        fail("the alibi_scaling factor must be at least 1 (JAISConfig: > 1, or none)");
    }
    positive(config.embedding_scale, "the embedding scale");
    if (config.clip_qkv) {
        positive(*config.clip_qkv, "clip_qkv");
    }
    if (config.softmax_scale) {
        positive(*config.softmax_scale, "softmax_scale");
    }
    if (config.logit_scale && (*config.logit_scale == 0.0 || !std::isfinite(*config.logit_scale))) {
        fail("logit_scale must be finite and non-zero");
    }
    if (config.alibi_train_seq_len && *config.alibi_train_seq_len < 2) {
        fail("the alibi_scaling train_seq_len must be at least 2");
    }
    if (config.bos_token_id && *config.bos_token_id >= config.vocab_size) {
        fail("bos_token_id is not below vocab_size");
    }
    for (const std::uint32_t eos : config.eos_token_ids) {
        if (eos >= config.vocab_size) {
            fail("eos_token_id " + std::to_string(eos) + " is not below vocab_size");
        }
    }
}

ModelConfig parse_model_config(std::string_view json_text, std::string_view source_name) {
    return config_from_json(parse_json(json_text, source_name));
}

ModelConfig read_model_config(const std::filesystem::path& path) {
    std::error_code ignored;  // a path that cannot be inspected is reported by the read below
    const std::filesystem::path file = std::filesystem::is_directory(path, ignored) ? path / "config.json" : path;
    return config_from_json(read_json_file(file));
}

}  // namespace vkf
