#include "host/spec/model_config.hpp"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <system_error>

#include "host/io/json.hpp"
#include "host/io/npy.hpp"
#include "host/io/safetensors.hpp"
#include "runtime/error.hpp"

namespace vkf {
namespace {

// A key that may be absent; JSON null counts as absent, as it does for Hugging Face's
// optional settings ("clip_qkv": null, "n_inner": null).
const JsonValue* optional_key(const JsonValue& object, std::string_view key) {
    const JsonValue* value = object.find(key);
    return value == nullptr || value->is_null() ? nullptr : value;
}

std::uint32_t positive_dimension(const JsonValue& value) {
    const auto dimension = value.as_integer<std::uint32_t>();
    if (dimension == 0) {
        value.fail("must be positive");
    }
    return dimension;
}

// The first present key among `keys` (Hugging Face configs have aliases), or a
// "missing key" error naming them all.
const JsonValue& required_key(const JsonValue& root, std::initializer_list<std::string_view> keys) {
    for (std::string_view key : keys) {
        if (const JsonValue* value = optional_key(root, key)) {
            return *value;
        }
    }
    std::string names;
    for (std::string_view key : keys) {
        names += (names.empty() ? "'" : "' or '") + std::string(key);
    }
    root.fail("missing key " + names + "'");
}

double positive_number(const JsonValue& value) {
    const double number = value.as_double();
    if (!(number > 0.0) || !std::isfinite(number)) {
        value.fail("must be a positive number");
    }
    return number;
}

bool bool_or(const JsonValue& object, std::string_view key, bool fallback) {
    const JsonValue* value = optional_key(object, key);
    return value == nullptr ? fallback : value->as_bool();
}

// Refuses a setting whose value vkformer cannot honour, naming the key.
void refuse_if(bool condition, const JsonValue& value, std::string_view why) {
    if (condition) {
        value.fail(std::string(why));
    }
}

// The sizes both families derive rather than state.
void derive_head_shape(ModelConfig& config) {
    config.n_kv_head = config.n_head;
    config.head_dim = config.hidden / config.n_head;
}

void require_divisible(const JsonValue& root, const ModelConfig& config, std::string_view hidden_key,
                       std::string_view head_key) {
    if (config.hidden % config.n_head != 0) {
        root.fail(std::string(hidden_key) + " " + std::to_string(config.hidden) + " is not a multiple of " +
                  std::string(head_key) + " " + std::to_string(config.n_head));
    }
}

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
    require_divisible(root, config, "hidden_size", "n_head");
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
    if (const JsonValue* post = optional_key(root, "apply_residual_connection_post_layernorm")) {
        refuse_if(post->as_bool(), *post,
                  "residual connections after the LayerNorm are not supported (only BLOOM's standard pre-norm "
                  "residuals)");
    }
    return config;
}

void check_mpt_attention(const JsonValue& attn, ModelConfig& config) {
    const JsonValue& alibi = attn.at("alibi");
    refuse_if(!alibi.as_bool(), alibi, "MPT without ALiBi (learned or rotary positions) is not supported");
    if (const JsonValue* bias_max = optional_key(attn, "alibi_bias_max")) {
        config.alibi_bias_max = positive_number(*bias_max);
    }
    if (const JsonValue* clip = optional_key(attn, "clip_qkv")) {
        config.clip_qkv = positive_number(*clip);
    }
    if (const JsonValue* type = optional_key(attn, "attn_type")) {
        refuse_if(type->as_string() != "multihead_attention", *type,
                  "'" + type->as_string() + "' is not supported (only multihead_attention)");
    }
    if (const JsonValue* qk_ln = optional_key(attn, "qk_ln")) {
        refuse_if(qk_ln->as_bool(), *qk_ln, "LayerNorm on queries and keys is not supported");
    }
    if (const JsonValue* scale = optional_key(attn, "softmax_scale")) {
        scale->fail("a custom softmax scale is not supported (only null: 1/sqrt(head_dim))");
    }
    if (const JsonValue* prefix_lm = optional_key(attn, "prefix_lm")) {
        refuse_if(prefix_lm->as_bool(), *prefix_lm, "prefix-LM masking is not supported (only causal)");
    }
    if (const JsonValue* rope = optional_key(attn, "rope")) {
        refuse_if(rope->as_bool(), *rope, "rotary position embeddings are not supported");
    }
    if (const JsonValue* window = optional_key(attn, "sliding_window_size")) {
        refuse_if(window->as_int64() != -1, *window, "sliding-window attention is not supported (only -1)");
    }
}

std::uint32_t mpt_ffn_hidden(const JsonValue& root, std::uint32_t d_model) {
    if (const JsonValue* ffn_config = optional_key(root, "ffn_config")) {
        if (const JsonValue* type = optional_key(*ffn_config, "ffn_type")) {
            refuse_if(type->as_string() != "mptmlp", *type,
                      "'" + type->as_string() + "' is not supported (only mptmlp)");
        }
        if (const JsonValue* act = optional_key(*ffn_config, "ffn_act_fn")) {
            const JsonValue& name = act->at("name");
            refuse_if(name.as_string() != "gelu", name, "only the exact (erf) GELU is supported");
            if (const JsonValue* approximate = optional_key(*act, "approximate")) {
                refuse_if(approximate->as_string() != "none", *approximate, "only the exact (erf) GELU is supported");
            }
        }
        if (const JsonValue* size = optional_key(*ffn_config, "ffn_hidden_size")) {
            return positive_dimension(*size);
        }
    }
    const JsonValue* ratio_value = optional_key(root, "expansion_ratio");
    const double ratio = ratio_value == nullptr ? 4.0 : positive_number(*ratio_value);
    // Python's int(expansion_ratio * d_model): truncation, as llm-foundry sizes the MLP.
    const double ffn = std::trunc(ratio * d_model);
    if (!(ffn >= 1.0) || ffn > std::numeric_limits<std::uint32_t>::max()) {
        (ratio_value != nullptr ? *ratio_value : root)
            .fail("expansion_ratio * d_model = " + std::to_string(ffn) + " is not a usable MLP width");
    }
    return static_cast<std::uint32_t>(ffn);
}

ModelConfig parse_mpt(const JsonValue& root) {
    ModelConfig config{.family = ModelFamily::Mpt};
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    config.hidden = positive_dimension(required_key(root, {"d_model"}));
    config.n_layer = positive_dimension(required_key(root, {"n_layers"}));
    config.n_head = positive_dimension(required_key(root, {"n_heads"}));
    require_divisible(root, config, "d_model", "n_heads");
    config.ffn_hidden = mpt_ffn_hidden(root, config.hidden);
    if (const JsonValue* max_seq_len = optional_key(root, "max_seq_len")) {
        config.max_seq_len = positive_dimension(*max_seq_len);
    }
    config.no_bias = bool_or(root, "no_bias", false);
    if (const JsonValue* epsilon = optional_key(root, "layer_norm_epsilon")) {
        config.layer_norm_epsilon = positive_number(*epsilon);
    }
    config.tie_word_embeddings = bool_or(root, "tie_word_embeddings", true);
    if (const JsonValue* norm = optional_key(root, "norm_type")) {
        const std::string& type = norm->as_string();
        refuse_if(type != "low_precision_layernorm" && type != "layernorm", *norm,
                  "'" + type + "' is not supported (only layernorm and low_precision_layernorm)");
    }
    if (const JsonValue* logit_scale = optional_key(root, "logit_scale")) {
        logit_scale->fail("scaled logits are not supported (only null)");
    }
    check_mpt_attention(required_key(root, {"attn_config"}), config);
    return config;
}

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
        config = parse_bloom(root);
    } else if (type == "mpt") {
        config = parse_mpt(root);
    } else {
        model_type.fail("'" + type + "' is not supported (vkformer runs bloom and mpt)");
    }
    derive_head_shape(config);
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
    }
    return "unknown";
}

void validate(const ModelConfig& config) {
    const auto fail = [&](const std::string& problem) {
        throw Error("model config (" + std::string(family_name(config.family)) + "): " + problem);
    };
    if (config.family != ModelFamily::Bloom && config.family != ModelFamily::Mpt) {
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
    if (config.n_kv_head != config.n_head) {
        fail("n_kv_head " + std::to_string(config.n_kv_head) + " differs from n_head " + std::to_string(config.n_head) +
             " (both families use multi-head attention)");
    }
    if (config.family == ModelFamily::Bloom) {
        if (std::uint64_t{config.ffn_hidden} != 4 * std::uint64_t{config.hidden}) {
            fail("ffn_hidden " + std::to_string(config.ffn_hidden) + " is not 4 * hidden (BLOOM's MLP is 4h)");
        }
        if (config.no_bias || config.clip_qkv) {
            fail("no_bias and clip_qkv are MPT settings");
        }
    }
    if (!(config.layer_norm_epsilon > 0.0) || !std::isfinite(config.layer_norm_epsilon)) {
        fail("layer_norm_epsilon must be positive and finite");
    }
    if (!(config.alibi_bias_max > 0.0) || !std::isfinite(config.alibi_bias_max)) {
        fail("alibi_bias_max must be positive and finite");
    }
    if (config.clip_qkv && (!(*config.clip_qkv > 0.0) || !std::isfinite(*config.clip_qkv))) {
        fail("clip_qkv must be positive and finite");
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
