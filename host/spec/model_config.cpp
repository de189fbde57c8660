#include "host/spec/model_config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <system_error>

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/io/npy.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/alibi.hpp"
#include "host/spec/config_checks.hpp"
#include "host/spec/config_keys.hpp"
#include "host/spec/family_spec.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "host/util/half.hpp"

namespace vkf {
namespace {

using config_keys::optional_key;
using config_keys::required_key;

// A token id must name a row of the vocabulary: an EOS id past it would never stop generation.
std::uint32_t token_id(const JsonValue& value, const ModelConfig& config) {
    const auto id = value.as_integer<std::uint32_t>();
    if (id >= config.vocab_size) {
        value.fail("token id " + fmt::to_string(id) + " is not below vocab_size " + fmt::to_string(config.vocab_size));
    }
    return id;
}

// -1 says there is none: Refact-1.6B's config has "bos_token_id": -1 (its code adds no BOS).
bool no_token(const JsonValue& value) {
    return value.is_number() && value.as_double() == -1.0;
}

void read_special_token_ids(const JsonValue& root, ModelConfig& config) {
    if (const JsonValue* bos = optional_key(root, "bos_token_id"); bos != nullptr && !no_token(*bos)) {
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
    const FamilySpec* spec = find_family_by_model_type(type);
    if (spec == nullptr) {
        std::vector<std::string_view> names;
        for (const FamilySpec& family : families()) {
            names.push_back(family.model_types.front());  // Refact's gpt_refact
        }
        model_type.fail("'" + type + "' is not supported (vkformer runs " + and_list(names) + ")");
    }
    ModelConfig config = spec->parse(root);
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

// A setting only some families' modeling code has (FamilySettings), and how a config states it.
struct Setting {
    bool FamilySettings::*allowed;
    bool (*set)(const ModelConfig&);
    std::string_view what;
};
constexpr Setting kSettings[] = {
    {&FamilySettings::grouped_query, [](const ModelConfig& c) { return c.n_kv_head != c.n_head; },
     "grouped-query attention (n_kv_head != n_head)"},
    {&FamilySettings::clip_qkv, [](const ModelConfig& c) { return c.clip_qkv.has_value(); }, "clip_qkv"},
    {&FamilySettings::qk_ln, [](const ModelConfig& c) { return c.qk_ln; }, "qk_ln"},
    {&FamilySettings::learned_pos_emb, [](const ModelConfig& c) { return c.learned_pos_emb; }, "learned_pos_emb"},
    {&FamilySettings::no_alibi, [](const ModelConfig& c) { return !c.alibi; }, "attention without ALiBi"},
    {&FamilySettings::alibi_bias_max, [](const ModelConfig& c) { return c.alibi_bias_max != 8.0; },
     "alibi_bias_max other than 8"},
    {&FamilySettings::softmax_scale, [](const ModelConfig& c) { return c.softmax_scale.has_value(); },
     "a softmax scale other than 1/sqrt(head_dim)"},
    {&FamilySettings::logit_scale, [](const ModelConfig& c) { return c.logit_scale.has_value(); }, "logit_scale"},
    {&FamilySettings::embedding_scale, [](const ModelConfig& c) { return c.embedding_scale != 1.0; },
     "an embedding scale"},
    {&FamilySettings::alibi_scaling,
     [](const ModelConfig& c) { return c.alibi_scaling_factor != 1.0 || c.alibi_train_seq_len.has_value(); },
     "alibi_scaling"},
    {&FamilySettings::post_layernorm_residual, [](const ModelConfig& c) { return c.post_layernorm_residual; },
     "residuals after the LayerNorm (apply_residual_connection_post_layernorm)"},
    {&FamilySettings::normalized_lm_head, [](const ModelConfig& c) { return c.normalized_lm_head; },
     "a normalized LM head"},
    {&FamilySettings::no_bias, [](const ModelConfig& c) { return c.no_bias; }, "no_bias"},
};

}  // namespace

std::string_view family_name(ModelFamily family) {
    for (const FamilySpec& spec : families()) {
        if (spec.family == family) {
            return spec.name;
        }
    }
    return "unknown";  // validate() names the family of any config it refuses
}

FamilyTraits family_traits(ModelFamily family) {
    return family_spec(family).traits;
}

bool has_linear_bias(const ModelConfig& config) {
    return !config.no_bias;
}

bool has_norm_bias(const ModelConfig& config) {
    const FamilySpec& spec = family_spec(config.family);
    return spec.traits.norm_bias && !(spec.no_bias_drops_norm_bias && config.no_bias);
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
    const ConfigChecks checks("model config (" + std::string(family_name(config.family)) + ")");
    const auto index = static_cast<std::size_t>(config.family);
    if (index >= families().size()) {
        checks.fail("unknown family " + fmt::to_string(static_cast<int>(config.family)));
    }
    const FamilySpec& spec = family_spec(config.family);
    if (config.vocab_size == 0 || config.hidden == 0 || config.n_layer == 0 || config.n_head == 0 ||
        config.ffn_hidden == 0 || config.max_seq_len == 0) {
        checks.fail("vocab_size, hidden, n_layer, n_head, ffn_hidden and max_seq_len must all be positive");
    }
    checks.at_most("n_layer", config.n_layer, ModelLimits::max_layers);
    checks.at_most("hidden", config.hidden, ModelLimits::max_hidden);
    checks.at_most("n_head", config.n_head, ModelLimits::max_heads);
    checks.at_most("ffn_hidden", config.ffn_hidden, ModelLimits::max_ffn_hidden);
    checks.at_most("vocab_size", config.vocab_size, ModelLimits::max_vocab);
    checks.at_most("max_seq_len", config.max_seq_len, ModelLimits::max_seq_len);
    checks.head_split(config.hidden, config.n_head, config.head_dim);
    if (config.n_kv_head == 0 || config.n_head % config.n_kv_head != 0) {
        checks.fail("n_head " + fmt::to_string(config.n_head) + " is not a multiple of n_kv_head " +
                    fmt::to_string(config.n_kv_head));
    }
    for (const Setting& setting : kSettings) {
        if (setting.set(config) && !(spec.settings.*setting.allowed)) {
            checks.fail(std::string(setting.what) + " is not a setting of " + std::string(spec.name) + " models");
        }
    }
    if (spec.check != nullptr) {
        if (const std::string problem = spec.check(config); !problem.empty()) {
            checks.fail(problem);
        }
    }
    if (config.normalized_lm_head && config.tie_word_embeddings) {
        checks.fail("a normalized LM head cannot be tied to the embedding");
    }
    checks.positive(config.layer_norm_epsilon, "layer_norm_epsilon");
    checks.positive(config.alibi_bias_max, "alibi_bias_max");
    checks.positive(config.alibi_scaling_factor, "the alibi_scaling factor");
    if (config.alibi_scaling_factor < 1.0) {
        checks.fail("the alibi_scaling factor must be at least 1 (JAISConfig: > 1, or none)");
    }
    checks.positive(config.embedding_scale, "the embedding scale");
    if (config.clip_qkv) {
        checks.positive(*config.clip_qkv, "clip_qkv");
    }
    if (config.softmax_scale) {
        checks.positive(*config.softmax_scale, "softmax_scale");
    }
    if (config.logit_scale && (*config.logit_scale == 0.0 || !std::isfinite(*config.logit_scale))) {
        checks.fail("logit_scale must be finite and non-zero");
    }
    if (config.alibi_train_seq_len && *config.alibi_train_seq_len < 2) {
        checks.fail("the alibi_scaling train_seq_len must be at least 2");
    }
    if (config.bos_token_id && *config.bos_token_id >= config.vocab_size) {
        checks.fail("bos_token_id is not below vocab_size");
    }
    for (const std::uint32_t eos : config.eos_token_ids) {
        if (eos >= config.vocab_size) {
            checks.fail("eos_token_id " + fmt::to_string(eos) + " is not below vocab_size");
        }
    }
}

ModelConfig parse_model_config(std::string_view json_text, std::string_view source_name) {
    return config_from_json(parse_json(json_text, source_name));
}

ModelConfig read_model_config(const std::filesystem::path& path) {
    std::error_code ignored;  // a path that cannot be inspected is reported by the read below
    if (std::filesystem::is_regular_file(path, ignored) && looks_like_gguf(path)) {
        return model_config_from_gguf(open_gguf(path));
    }
    const std::filesystem::path file = std::filesystem::is_directory(path, ignored) ? path / "config.json" : path;
    return config_from_json(read_json_file(file));
}

}  // namespace vkf
