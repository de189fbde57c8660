// hf_config_json (model_config.hpp): the config.json Hugging Face writes for a BLOOM or MPT
// model of a given shape.

#include "host/spec/model_config.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace vkf {
namespace {

// nlohmann::json keeps object keys sorted, as transformers writes config.json.
using Json = nlohmann::json;

std::string_view torch_dtype(DType dtype) {
    switch (dtype) {
        case DType::F32:
            return "float32";
        case DType::F16:
            return "float16";
        case DType::BF16:
            return "bfloat16";
        default:
            throw Error(fmt::format("checkpoint writer: dtype {} is not one of F32, F16, BF16", dtype_name(dtype)));
    }
}

// expansion_ratio such that Python's int(expansion_ratio * d_model) == ffn_hidden.
double mpt_expansion_ratio(const ModelConfig& config) {
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

Json bloom_config(const ModelConfig& config, DType dtype) {
    Json json = {
        {"apply_residual_connection_post_layernorm", false},
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
        {"torch_dtype", torch_dtype(dtype)},
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

Json mpt_config(const ModelConfig& config, DType dtype) {
    Json json = {
        {"architectures", {"MPTForCausalLM"}},
        {"attn_config",
         {
             {"alibi", true},
             {"alibi_bias_max", config.alibi_bias_max},
             {"attn_impl", "torch"},
             {"attn_pdrop", 0},
             {"attn_type", "multihead_attention"},
             {"attn_uses_sequence_id", false},
             {"clip_qkv", config.clip_qkv ? Json(*config.clip_qkv) : Json(nullptr)},
             {"prefix_lm", false},
             {"qk_ln", false},
             {"softmax_scale", nullptr},
         }},
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
        {"learned_pos_emb", true},
        {"logit_scale", nullptr},
        {"max_seq_len", config.max_seq_len},
        {"model_type", "mpt"},
        {"n_heads", config.n_head},
        {"n_layers", config.n_layer},
        {"no_bias", config.no_bias},
        {"norm_type", "low_precision_layernorm"},
        {"resid_pdrop", 0},
        {"torch_dtype", torch_dtype(dtype)},
        {"use_cache", false},
        {"verbose", 0},
        {"vocab_size", config.vocab_size},
    };
    if (config.ffn_hidden % config.hidden == 0) {
        json["expansion_ratio"] = config.ffn_hidden / config.hidden;
    } else {
        json["expansion_ratio"] = mpt_expansion_ratio(config);
    }
    if (config.layer_norm_epsilon != 1e-5) {
        json["layer_norm_epsilon"] = config.layer_norm_epsilon;
    }
    if (!config.tie_word_embeddings) {
        json["tie_word_embeddings"] = false;
    }
    return json;
}

}  // namespace

std::string hf_config_json(const ModelConfig& config, DType dtype) {
    validate(config);
    Json json = config.family == ModelFamily::Bloom ? bloom_config(config, dtype) : mpt_config(config, dtype);
    if (config.bos_token_id) {
        json["bos_token_id"] = *config.bos_token_id;
    }
    if (config.eos_token_ids.size() == 1) {
        json["eos_token_id"] = config.eos_token_ids[0];
    } else if (!config.eos_token_ids.empty()) {
        json["eos_token_id"] = config.eos_token_ids;
    }
    return json.dump(2) + "\n";
}

}  // namespace vkf
