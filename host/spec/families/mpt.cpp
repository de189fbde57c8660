// MPT (MPTForCausalLM, llm-foundry's modeling_mpt.py and attention.py): config.json keys,
// traits, tensor names and what vkf-make-checkpoint --family mpt writes.

#include "host/spec/config_keys.hpp"
#include "host/spec/families/families.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace vkf::family_defs {

using namespace config_keys;

namespace {

void read_attention(const JsonValue& attn, ModelConfig& config) {
    config.alibi = bool_or(attn, "alibi", false);
    if (const JsonValue* bias_max = optional_key(attn, "alibi_bias_max")) {
        config.alibi_bias_max = positive_number(*bias_max);
    }
    if (const JsonValue* clip = optional_key(attn, "clip_qkv")) {
        config.clip_qkv = positive_number(*clip);
    }
    // GroupedQueryAttention: multi-head is kv_n_heads = n_heads, multi-query kv_n_heads = 1.
    config.n_kv_head = config.n_head;
    const std::string type = string_or(attn, "attn_type", "multihead_attention");
    if (type == "multiquery_attention") {
        config.n_kv_head = 1;
    } else if (type == "grouped_query_attention") {
        const JsonValue* kv = optional_key(attn, "kv_n_heads");
        config.n_kv_head = kv == nullptr ? 1 : positive_dimension(*kv);
        if (config.n_head % config.n_kv_head != 0) {
            kv->fail("n_heads " + fmt::to_string(config.n_head) + " is not a multiple of kv_n_heads " +
                     fmt::to_string(config.n_kv_head));
        }
    } else if (type != "multihead_attention") {
        attn.at("attn_type")
            .fail("'" + type +
                  "' is not supported (multihead_attention, multiquery_attention, "
                  "grouped_query_attention)");
    }
    config.qk_ln = bool_or(attn, "qk_ln", false);
    refuse_true(attn, "qk_gn", "group norms on queries and keys are not supported (qk_ln is)");
    if (const JsonValue* scale = optional_key(attn, "softmax_scale")) {
        config.softmax_scale = positive_number(*scale);
    }
    refuse_true(attn, "prefix_lm", "prefix-LM masking is not supported (only causal)");
    refuse_true(attn, "rope", "rotary position embeddings are not supported");
    if (const JsonValue* fused = optional_key(attn, "fused_qkv")) {
        refuse_if(!fused->as_bool(), *fused, "separate Wq, Wk and Wv are not supported (only the fused Wqkv)");
    }
    // llm-foundry's attention.py: -1 is full attention; W >= 0 keeps the keys with
    // |i - j| <= W (tril(diagonal=W) and triu(diagonal=-W) of the mask), so W = 0 is each
    // token attending to itself alone, which AttentionParams::window (0 = full) cannot say.
    if (const JsonValue* window = optional_key(attn, "sliding_window_size")) {
        const std::int64_t w = window->as_int64();
        refuse_if(w == 0, *window, "0 (each token attending only to itself) is not supported; -1 or 1 and up");
        refuse_if(w < -1, *window, "must be -1 (no window) or a positive number of tokens");
        refuse_if(w > std::numeric_limits<std::int32_t>::max() / 2, *window, "is too large");
        config.attention_window = w == -1 ? 0 : static_cast<std::uint32_t>(w);
    }
}

std::uint32_t ffn_hidden(const JsonValue& root, std::uint32_t d_model) {
    if (const JsonValue* ffn_config = optional_key(root, "ffn_config")) {
        require_string(*ffn_config, "ffn_type", "mptmlp", "only mptmlp");
        if (const JsonValue* act = optional_key(*ffn_config, "ffn_act_fn")) {
            const JsonValue& name = act->at("name");
            refuse_if(name.as_string() != "gelu", name, "only the exact (erf) GELU is supported");
            require_string(*act, "approximate", "none", "only the exact (erf) GELU");
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
            .fail("expansion_ratio * d_model = " + fmt::format("{:f}", ffn) + " is not a usable MLP width");
    }
    return static_cast<std::uint32_t>(ffn);
}

// expansion_ratio such that Python's int(expansion_ratio * d_model) == ffn_hidden.
double expansion_ratio(const ModelConfig& config) {
    double ratio = static_cast<double>(config.ffn_hidden) / config.hidden;
    for (int attempt = 0; attempt < 4; ++attempt) {
        if (std::trunc(ratio * config.hidden) == config.ffn_hidden) {
            return ratio;
        }
        ratio = std::nextafter(ratio, 1e300);
    }
    throw Error(fmt::format("checkpoint writer: MLP width {} cannot be written as an expansion_ratio of d_model {}",
                            config.ffn_hidden, config.hidden));
}

ModelConfig parse(const JsonValue& root) {
    ModelConfig config{.family = ModelFamily::Mpt};
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    config.hidden = positive_dimension(required_key(root, {"d_model"}));
    config.n_layer = positive_dimension(required_key(root, {"n_layers"}));
    config.n_head = positive_dimension(required_key(root, {"n_heads"}));
    require_divisible(root, config.hidden, config.n_head, "d_model", "n_heads");
    config.ffn_hidden = ffn_hidden(root, config.hidden);
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
    // MPTForCausalLM multiplies the logits by logit_scale: a number, or "inv_sqrt_d_model".
    if (const JsonValue* logit_scale = optional_key(root, "logit_scale")) {
        if (logit_scale->is_string()) {
            refuse_if(logit_scale->as_string() != "inv_sqrt_d_model", *logit_scale,
                      "'" + logit_scale->as_string() + "' is not a logit scale (a number or inv_sqrt_d_model)");
            config.logit_scale = 1.0 / std::sqrt(static_cast<double>(config.hidden));
        } else {
            const double scale = logit_scale->as_double();
            refuse_if(!std::isfinite(scale) || scale == 0.0, *logit_scale, "must be a finite, non-zero number");
            config.logit_scale = scale;
        }
    }
    const JsonValue* embedding_fraction = optional_key(root, "embedding_fraction");
    refuse_if(embedding_fraction != nullptr && embedding_fraction->as_double() != 1.0,
              embedding_fraction != nullptr ? *embedding_fraction : root,
              "only 1 is supported (other values only change training)");
    read_attention(required_key(root, {"attn_config"}), config);
    // llm-foundry adds wpe whenever learned_pos_emb is set (its default); mosaicml/mpt-7b's
    // own modeling code adds it only without ALiBi, and its checkpoints hold no wpe although
    // their config says true. With ALiBi the config alone therefore means no wpe, and
    // resolve_with_checkpoint (model_tensors.hpp) turns it on when the checkpoint has one.
    config.learned_pos_emb = !config.alibi && bool_or(root, "learned_pos_emb", true);
    return config;
}

nlohmann::json write(const ModelConfig& config, std::string_view torch_dtype) {
    const bool gqa = config.n_kv_head != config.n_head;
    nlohmann::json attn = {
        {"alibi", config.alibi},
        {"alibi_bias_max", config.alibi_bias_max},
        {"attn_impl", "torch"},
        {"attn_pdrop", 0},
        {"attn_type", gqa ? "grouped_query_attention" : "multihead_attention"},
        {"attn_uses_sequence_id", false},
        {"clip_qkv", config.clip_qkv ? nlohmann::json(*config.clip_qkv) : nlohmann::json(nullptr)},
        {"prefix_lm", false},
        {"qk_ln", config.qk_ln},
        {"sliding_window_size", config.attention_window == 0 ? -1 : std::int64_t{config.attention_window}},
        {"softmax_scale", config.softmax_scale ? nlohmann::json(*config.softmax_scale) : nlohmann::json(nullptr)},
    };
    if (gqa) {
        attn["kv_n_heads"] = config.n_kv_head;
    }
    nlohmann::json json = {
        {"architectures", {"MPTForCausalLM"}},
        {"attn_config", attn},
        {"d_model", config.hidden},
        {"emb_pdrop", 0},
        {"embedding_fraction", 1.0},
        {"init_config",
         {
             {"emb_init_std", nullptr},
             {"emb_init_uniform_lim", nullptr},
             {"fan_mode", "fan_in"},
             {"init_div_is_residual", true},
             {"init_gain", 0},
             {"init_nonlinearity", "relu"},
             {"init_std", 0.02},
             {"name", "kaiming_normal_"},
             {"verbose", 0},
         }},
        {"init_device", "cpu"},
        {"learned_pos_emb", config.learned_pos_emb},
        {"logit_scale", config.logit_scale ? nlohmann::json(*config.logit_scale) : nlohmann::json(nullptr)},
        {"max_seq_len", config.max_seq_len},
        {"model_type", "mpt"},
        {"n_heads", config.n_head},
        {"n_layers", config.n_layer},
        {"no_bias", config.no_bias},
        {"norm_type", "low_precision_layernorm"},
        {"resid_pdrop", 0},
        {"torch_dtype", torch_dtype},
        {"use_cache", false},
        {"verbose", 0},
        {"vocab_size", config.vocab_size},
    };
    if (config.ffn_hidden % config.hidden == 0) {
        json["expansion_ratio"] = config.ffn_hidden / config.hidden;
    } else {
        json["expansion_ratio"] = expansion_ratio(config);
    }
    if (config.layer_norm_epsilon != 1e-5) {
        json["layer_norm_epsilon"] = config.layer_norm_epsilon;
    }
    if (!config.tie_word_embeddings) {
        json["tie_word_embeddings"] = false;
    }
    return json;
}

void configure(ModelConfig& config, const CheckpointOptionValues& options) {
    config.no_bias = !options.given("--bias");  // as mpt-7b
    config.alibi_bias_max = options.number("--alibi-bias-max").value_or(8.0);
    config.clip_qkv = options.number("--clip-qkv");
    config.n_kv_head = options.count("--kv-heads").value_or(config.n_head);
    config.qk_ln = options.given("--qk-ln");
    config.softmax_scale = options.number("--softmax-scale");
    config.logit_scale = options.number("--logit-scale");
    config.alibi = !options.given("--no-alibi");
    config.learned_pos_emb = options.given("--learned-pos-emb");
}

using Kind = CheckpointOption::Kind;

constexpr std::string_view kModelTypes[] = {"mpt"};
constexpr CheckpointVariant kVariants[] = {
    {.name = "mpt", .tiny = {.n_layer = 2, .hidden = 192, .n_head = 6, .vocab_size = 512}},
};
constexpr CheckpointOption kOptions[] = {
    {.flag = "--bias", .help = "give every linear layer and LayerNorm a bias (default: no_bias,\nas mpt-7b)"},
    {.flag = "--alibi-bias-max", .kind = Kind::Positive, .value_name = "B", .help = "ALiBi maximum bias (default 8)"},
    {.flag = "--clip-qkv",
     .kind = Kind::Positive,
     .value_name = "C",
     .help = "clamp the QKV projection to [-C, C] (default: no clamp)"},
    {.flag = "--kv-heads",
     .kind = Kind::Count,
     .value_name = "N",
     .help = "grouped-query attention with N key/value heads"},
    {.flag = "--qk-ln", .help = "LayerNorms on queries and keys (attn_config.qk_ln)"},
    {.flag = "--softmax-scale",
     .kind = Kind::Positive,
     .value_name = "S",
     .help = "the factor of q.k (default 1/sqrt(head size))"},
    {.flag = "--logit-scale", .kind = Kind::Positive, .value_name = "S", .help = "multiply the logits by S"},
    {.flag = "--no-alibi", .help = "attention without ALiBi (give --learned-pos-emb for positions)"},
    {.flag = "--learned-pos-emb", .help = "learned position embeddings (wpe)"},
};

constexpr FamilySpec kSpec{
    .family = ModelFamily::Mpt,
    .name = "mpt",
    .display_name = "MPT",
    .model_types = kModelTypes,
    .traits = {.architecture = "MPTForCausalLM",
               .norm = NormKind::LayerNorm,
               .mlp = MlpKind::Plain,
               .activation = Activation::GeluErf,
               .interleaved_qkv = false,
               .embedding_norm = false,
               .norm_bias = true,
               .alibi_form = AlibiForm::Standard,
               .mpt_slopes = true},
    .no_bias_drops_norm_bias = true,
    .settings = {.grouped_query = true,
                 .clip_qkv = true,
                 .qk_ln = true,
                 .learned_pos_emb = true,
                 .no_alibi = true,
                 .alibi_bias_max = true,
                 .softmax_scale = true,
                 .logit_scale = true,
                 .no_bias = true},
    .tensors = {.embedding = "wte",
                .position_embedding = "wpe",
                .layer_prefix = "blocks.",
                .attn_norm = "norm_1",
                .qkv = "attn.Wqkv",
                .q_norm = "attn.q_ln",
                .k_norm = "attn.k_ln",
                .attn_out = "attn.out_proj",
                .mlp_norm = "norm_2",
                .up = "ffn.up_proj",
                .down = "ffn.down_proj",
                .final_norm = "norm_f"},
    .parse = parse,
    .write = write,
    .writer = {.variants = kVariants, .options = kOptions, .configure = configure},
};

}  // namespace

const FamilySpec& mpt() {
    return kSpec;
}

}  // namespace vkf::family_defs
