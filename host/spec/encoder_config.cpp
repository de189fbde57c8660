#include "host/spec/encoder_config.hpp"

#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/json.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/config_checks.hpp"
#include "host/spec/config_keys.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "host/spec/model_config.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <system_error>

namespace vkf {
namespace {

using config_keys::optional_key;
using config_keys::positive_dimension;
using config_keys::refuse_if;
using config_keys::refuse_true;
using config_keys::require_string;
using config_keys::required_key;

EncoderConfig config_from_json(const JsonValue& root) {
    root.as_object();
    const JsonValue& model_type = required_key(root, {"model_type"});
    refuse_if(model_type.as_string() != "bert", model_type,
              "'" + model_type.as_string() + "' is not an encoder vkformer runs (only JinaBERT: bert)");
    config_keys::require_string_or_absent(root, "position_embedding_type", "alibi", "absolute",
                                          "only alibi: JinaBERT's symmetric ALiBi; BERT's learned positions are not");
    config_keys::require_string_or_absent(root, "feed_forward_type", "geglu", "original",
                                          "only geglu: JinaBERT's GELU-gated MLP, mlp.gated_layers and mlp.wo");
    // The GEGLU MLP takes its GELU (exact, erf) from feed_forward_type; any other hidden_act
    // says the checkpoint was made for a model that is not the one run here.
    require_string(root, "hidden_act", "gelu", "only gelu, the exact erf form");
    require_string(root, "emb_pooler", "mean", "only mean or null");
    refuse_true(root, "is_decoder", "a decoder (causal) BERT is not supported: only the bidirectional encoder");
    refuse_true(root, "add_cross_attention", "cross-attention is not supported");
    if (const JsonValue* scaling = optional_key(root, "alibi_scaling")) {
        refuse_if(scaling->as_double() != 1.0, *scaling, "scaled ALiBi slopes are not supported (only 1)");
    }
    // jina-embeddings-v2-base-code and its kin load jina-bert-v2-qk-post-norm, which adds
    // LayerNorms on Q and K and moves the others: other tensors, other numerics.
    if (const JsonValue* auto_map = optional_key(root, "auto_map"); auto_map != nullptr && auto_map->is_object()) {
        for (const JsonMember& member : auto_map->as_object()) {
            if (member.value.is_string() && member.value.as_string().find("qk-post-norm") != std::string::npos) {
                member.value.fail("'" + member.value.as_string() +
                                  "' is JinaBERT with QK LayerNorm (qk-post-norm), which is not supported");
            }
        }
    }

    EncoderConfig config;
    config.vocab_size = positive_dimension(required_key(root, {"vocab_size"}));
    config.hidden = positive_dimension(required_key(root, {"hidden_size"}));
    config.n_layer = positive_dimension(required_key(root, {"num_hidden_layers"}));
    config.n_head = positive_dimension(required_key(root, {"num_attention_heads"}));
    config.intermediate = positive_dimension(required_key(root, {"intermediate_size"}));
    if (const JsonValue* types = optional_key(root, "type_vocab_size")) {
        config.type_vocab_size = positive_dimension(*types);
    }
    if (const JsonValue* positions = optional_key(root, "max_position_embeddings")) {
        config.max_position_embeddings = positive_dimension(*positions);
    }
    if (const JsonValue* eps = optional_key(root, "layer_norm_eps")) {
        config.layer_norm_eps = config_keys::positive_number(*eps);
    }
    config_keys::require_divisible(root, config.hidden, config.n_head, "hidden_size", "num_attention_heads");
    config.head_dim = config.hidden / config.n_head;
    try {
        validate(config);
    } catch (const Error& error) {
        root.fail(error.what());
    }
    return config;
}

}  // namespace

std::string_view encoder_family_name(EncoderFamily family) {
    switch (family) {
        case EncoderFamily::JinaBert:
            return "jina-bert";
    }
    return "unknown";
}

void validate(const EncoderConfig& c) {
    const ConfigChecks checks("encoder config (" + std::string(encoder_family_name(c.family)) + ")");
    if (c.family != EncoderFamily::JinaBert) {
        checks.fail("unknown family " + fmt::to_string(static_cast<int>(c.family)));
    }
    if (c.vocab_size == 0 || c.hidden == 0 || c.n_layer == 0 || c.n_head == 0 || c.intermediate == 0 ||
        c.type_vocab_size == 0 || c.max_position_embeddings == 0) {
        checks.fail(
            "vocab_size, hidden, n_layer, n_head, intermediate, type_vocab_size and max_position_embeddings must "
            "all be positive");
    }
    checks.at_most("n_layer", c.n_layer, EncoderLimits::max_layers);
    checks.at_most("hidden", c.hidden, EncoderLimits::max_hidden);
    checks.at_most("n_head", c.n_head, EncoderLimits::max_heads);
    checks.at_most("intermediate", c.intermediate, EncoderLimits::max_intermediate);
    checks.at_most("vocab_size", c.vocab_size, EncoderLimits::max_vocab);
    checks.at_most("type_vocab_size", c.type_vocab_size, EncoderLimits::max_type_vocab);
    checks.at_most("max_position_embeddings", c.max_position_embeddings, EncoderLimits::max_positions);
    checks.head_split(c.hidden, c.n_head, c.head_dim);
    checks.positive(c.layer_norm_eps, "layer_norm_eps");
}

EncoderConfig parse_encoder_config(std::string_view json_text, std::string_view source_name) {
    return config_from_json(parse_json(json_text, source_name));
}

EncoderConfig read_encoder_config(const std::filesystem::path& path) {
    std::error_code ignored;  // a path that cannot be inspected is reported by the read below
    if (std::filesystem::is_regular_file(path, ignored) && looks_like_gguf(path)) {
        return encoder_config_from_gguf(open_gguf(path));
    }
    const std::filesystem::path file = std::filesystem::is_directory(path, ignored) ? path / "config.json" : path;
    return config_from_json(read_json_file(file));
}

bool is_encoder_config(std::string_view json_text, std::string_view source_name) {
    const JsonValue root = parse_json(json_text, source_name);
    if (!root.is_object()) {
        return false;
    }
    const JsonValue* model_type = optional_key(root, "model_type");
    return model_type != nullptr && model_type->is_string() && model_type->as_string() == "bert";
}

std::string encoder_hf_config_json(const EncoderConfig& c, DType dtype) {
    validate(c);
    // nlohmann::json keeps object keys sorted, as transformers writes config.json. The
    // auto_map is jina-embeddings-v2's: the code a Hugging Face loader would fetch.
    const nlohmann::json json = {
        {"architectures", {"JinaBertForMaskedLM"}},
        {"attention_probs_dropout_prob", 0.0},
        {"auto_map",
         {{"AutoConfig", "jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig"},
          {"AutoModel", "jinaai/jina-bert-implementation--modeling_bert.JinaBertModel"},
          {"AutoModelForMaskedLM", "jinaai/jina-bert-implementation--modeling_bert.JinaBertForMaskedLM"}}},
        {"classifier_dropout", nullptr},
        {"emb_pooler", "mean"},
        {"feed_forward_type", "geglu"},
        {"hidden_act", "gelu"},
        {"hidden_dropout_prob", 0.1},
        {"hidden_size", c.hidden},
        {"initializer_range", 0.02},
        {"intermediate_size", c.intermediate},
        {"layer_norm_eps", c.layer_norm_eps},
        {"max_position_embeddings", c.max_position_embeddings},
        {"model_type", "bert"},
        {"num_attention_heads", c.n_head},
        {"num_hidden_layers", c.n_layer},
        {"pad_token_id", 0},
        {"position_embedding_type", "alibi"},
        {"torch_dtype", torch_dtype_name(dtype)},
        {"transformers_version", "4.26.0"},
        {"type_vocab_size", c.type_vocab_size},
        {"use_cache", true},
        {"vocab_size", c.vocab_size},
    };
    return json.dump(2) + "\n";
}

std::vector<ExpectedTensor> expected_encoder_tensors(const EncoderConfig& c) {
    validate(c);
    const std::size_t h = c.hidden;
    std::vector<ExpectedTensor> tensors;
    const auto add = [&](std::string name, std::vector<std::size_t> shape, TensorRole role) {
        tensors.push_back(ExpectedTensor{.name = std::move(name), .shape = std::move(shape), .role = role});
    };
    const auto norm = [&](const std::string& prefix) {
        add(prefix + ".weight", {h}, TensorRole::NormWeight);
        add(prefix + ".bias", {h}, TensorRole::NormBias);
    };
    const auto linear = [&](const std::string& prefix, std::size_t out, std::size_t in, bool bias) {
        add(prefix + ".weight", {out, in}, TensorRole::LinearWeight);
        if (bias) {
            add(prefix + ".bias", {out}, TensorRole::LinearBias);
        }
    };
    add("embeddings.word_embeddings.weight", {c.vocab_size, h}, TensorRole::Embedding);
    // Only row 0 is read (one segment), but the table is checked whole. Its role keeps it
    // dense: a [2, hidden] table is no matrix worth quantizing.
    add("embeddings.token_type_embeddings.weight", {c.type_vocab_size, h}, TensorRole::NormBias);
    norm("embeddings.LayerNorm");
    for (std::uint32_t i = 0; i < c.n_layer; ++i) {
        const std::string layer = "encoder.layer." + fmt::to_string(i);
        linear(layer + ".attention.self.query", h, h, true);
        linear(layer + ".attention.self.key", h, h, true);
        linear(layer + ".attention.self.value", h, h, true);
        linear(layer + ".attention.output.dense", h, h, true);
        norm(layer + ".attention.output.LayerNorm");
        linear(layer + ".mlp.gated_layers", 2 * std::size_t{c.intermediate}, h, false);
        linear(layer + ".mlp.wo", h, c.intermediate, true);
        norm(layer + ".mlp.layernorm");
    }
    return tensors;
}

std::string encoder_tensor_name(const ShardedCheckpoint& checkpoint, std::string_view name) {
    // ShardedCheckpoint::find also tries a "transformer." prefix, which no BERT checkpoint
    // has; what it finds here is the name itself or the "bert." one.
    if (checkpoint.find(name) != nullptr) {
        return std::string(name);
    }
    std::string prefixed = std::string(kBertPrefix) + std::string(name);
    if (checkpoint.find(prefixed) != nullptr) {
        return prefixed;
    }
    return {};
}

void check_encoder_checkpoint(const ShardedCheckpoint& checkpoint, const EncoderConfig& config) {
    std::vector<std::string> problems;
    for (const ExpectedTensor& expected : expected_encoder_tensors(config)) {
        const std::string stored = encoder_tensor_name(checkpoint, expected.name);
        if (stored.empty()) {
            problems.push_back("tensor '" + expected.name + "' (expected shape " + shape_text(expected.shape) +
                               ") is missing from every file (also looked for '" + std::string(kBertPrefix) +
                               expected.name + "')");
            continue;
        }
        const CheckpointTensor& tensor = checkpoint.at(stored);
        const TensorInfo& info = *tensor.info;
        const std::string where = tensor.file->label() + ": tensor '" + info.name + "': ";
        if (info.shape != expected.shape) {
            problems.push_back(where + "shape " + shape_text(info.shape) + " but the config expects " +
                               shape_text(expected.shape));
        }
        if (!is_supported_float(info.dtype)) {
            problems.push_back(where + "dtype " + std::string(dtype_name(info.dtype)) +
                               " is not one vkformer reads (F32, F16, BF16)");
        }
    }
    throw_if_problems("checkpoint '" + checkpoint.source().string() + "'", encoder_family_name(config.family),
                      problems);
}

}  // namespace vkf
