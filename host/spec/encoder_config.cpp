#include "host/spec/encoder_config.hpp"

#include "host/io/json.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/config_keys.hpp"
#include "host/spec/model_config.hpp"
#include "host/util/format.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <system_error>

namespace vkf {
namespace {

using config_keys::optional_key;
using config_keys::refuse_true;

std::uint32_t positive_dimension(const JsonValue& root, std::string_view key) {
    return config_keys::positive_dimension(config_keys::required_key(root, {key}));
}

// A string setting that must have one value to be run faithfully; `absent` is what the
// modeling code assumes when the key is missing.
void require_string(const JsonValue& root, std::string_view key, std::string_view wanted, std::string_view absent,
                    std::string_view why) {
    const JsonValue* value = optional_key(root, key);
    if (value == nullptr) {
        if (absent != wanted) {
            root.fail("missing key '" + std::string(key) + "' means '" + std::string(absent) + "', which " +
                      std::string(why));
        }
        return;
    }
    const std::string& text = value->as_string();
    if (text != wanted) {
        value->fail("'" + text + "' " + std::string(why));
    }
}

EncoderConfig config_from_json(const JsonValue& root) {
    root.as_object();
    const JsonValue* model_type = optional_key(root, "model_type");
    if (model_type == nullptr) {
        root.fail("missing key 'model_type'");
    }
    if (model_type->as_string() != "bert") {
        model_type->fail("'" + model_type->as_string() + "' is not an encoder vkformer runs (only JinaBERT: bert)");
    }
    require_string(root, "position_embedding_type", "alibi", "absolute",
                   "is not supported (only alibi: JinaBERT's symmetric ALiBi; BERT's learned positions are not)");
    require_string(root, "feed_forward_type", "geglu", "original",
                   "is not supported (only geglu: JinaBERT's GELU-gated MLP, mlp.gated_layers and mlp.wo)");
    // The GEGLU MLP takes its GELU (exact, erf) from feed_forward_type; any other hidden_act
    // says the checkpoint was made for a model that is not the one run here.
    require_string(root, "hidden_act", "gelu", "gelu", "is not supported (only gelu, the exact erf form)");
    if (const JsonValue* pooler = optional_key(root, "emb_pooler")) {
        if (pooler->as_string() != "mean") {
            pooler->fail("'" + pooler->as_string() + "' is not supported (only mean or null)");
        }
    }
    refuse_true(root, "is_decoder", "a decoder (causal) BERT is not supported: only the bidirectional encoder");
    refuse_true(root, "add_cross_attention", "cross-attention is not supported");
    if (const JsonValue* scaling = optional_key(root, "alibi_scaling")) {
        if (scaling->as_double() != 1.0) {
            scaling->fail("scaled ALiBi slopes are not supported (only 1)");
        }
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
    config.vocab_size = positive_dimension(root, "vocab_size");
    config.hidden = positive_dimension(root, "hidden_size");
    config.n_layer = positive_dimension(root, "num_hidden_layers");
    config.n_head = positive_dimension(root, "num_attention_heads");
    config.intermediate = positive_dimension(root, "intermediate_size");
    if (optional_key(root, "type_vocab_size") != nullptr) {
        config.type_vocab_size = positive_dimension(root, "type_vocab_size");
    }
    if (optional_key(root, "max_position_embeddings") != nullptr) {
        config.max_position_embeddings = positive_dimension(root, "max_position_embeddings");
    }
    if (const JsonValue* eps = optional_key(root, "layer_norm_eps")) {
        config.layer_norm_eps = eps->as_double();
        if (!(config.layer_norm_eps > 0.0) || !std::isfinite(config.layer_norm_eps)) {
            eps->fail("must be a positive number");
        }
    }
    if (config.hidden % config.n_head != 0) {
        root.fail("hidden_size " + std::to_string(config.hidden) + " is not a multiple of num_attention_heads " +
                  std::to_string(config.n_head));
    }
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
    const auto fail = [&](const std::string& problem) {
        throw Error("encoder config (" + std::string(encoder_family_name(c.family)) + "): " + problem);
    };
    if (c.family != EncoderFamily::JinaBert) {
        fail("unknown family " + std::to_string(static_cast<int>(c.family)));
    }
    if (c.vocab_size == 0 || c.hidden == 0 || c.n_layer == 0 || c.n_head == 0 || c.intermediate == 0 ||
        c.type_vocab_size == 0 || c.max_position_embeddings == 0) {
        fail(
            "vocab_size, hidden, n_layer, n_head, intermediate, type_vocab_size and max_position_embeddings must "
            "all be positive");
    }
    const auto bound = [&](std::string_view name, std::uint32_t value, std::uint32_t limit) {
        if (value > limit) {
            fail(std::string(name) + " " + std::to_string(value) + " is over vkformer's limit of " +
                 std::to_string(limit) + " (no real checkpoint comes near it)");
        }
    };
    bound("n_layer", c.n_layer, EncoderLimits::max_layers);
    bound("hidden", c.hidden, EncoderLimits::max_hidden);
    bound("n_head", c.n_head, EncoderLimits::max_heads);
    bound("intermediate", c.intermediate, EncoderLimits::max_intermediate);
    bound("vocab_size", c.vocab_size, EncoderLimits::max_vocab);
    bound("type_vocab_size", c.type_vocab_size, EncoderLimits::max_type_vocab);
    bound("max_position_embeddings", c.max_position_embeddings, EncoderLimits::max_positions);
    if (c.hidden % c.n_head != 0) {
        fail("hidden " + std::to_string(c.hidden) + " is not a multiple of n_head " + std::to_string(c.n_head));
    }
    if (c.head_dim != c.hidden / c.n_head) {
        fail("head_dim " + std::to_string(c.head_dim) +
             " is not hidden / n_head = " + std::to_string(c.hidden / c.n_head));
    }
    if (!(c.layer_norm_eps > 0.0) || !std::isfinite(c.layer_norm_eps)) {
        fail("layer_norm_eps must be positive and finite");
    }
}

EncoderConfig parse_encoder_config(std::string_view json_text, std::string_view source_name) {
    return config_from_json(parse_json(json_text, source_name));
}

EncoderConfig read_encoder_config(const std::filesystem::path& path) {
    std::error_code ignored;  // a path that cannot be inspected is reported by the read below
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
        const std::string layer = "encoder.layer." + std::to_string(i);
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
    constexpr std::size_t kMaxListed = 20;
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
        const std::string where =
            "safetensors file '" + tensor.file->path().string() + "': tensor '" + info.name + "': ";
        if (info.shape != expected.shape) {
            problems.push_back(where + "shape " + shape_text(info.shape) + " but the config expects " +
                               shape_text(expected.shape));
        }
        if (!is_supported_float(info.dtype)) {
            problems.push_back(where + "dtype " + std::string(dtype_name(info.dtype)) +
                               " is not one vkformer reads (F32, F16, BF16)");
        }
    }
    if (problems.empty()) {
        return;
    }
    std::string message = "checkpoint '" + checkpoint.source().string() + "' does not match the " +
                          std::string(encoder_family_name(config.family)) + " config (" +
                          std::to_string(problems.size()) + (problems.size() == 1 ? " problem):" : " problems):");
    for (std::size_t i = 0; i < problems.size() && i < kMaxListed; ++i) {
        message += "\n  " + problems[i];
    }
    if (problems.size() > kMaxListed) {
        message += "\n  ... and " + std::to_string(problems.size() - kMaxListed) + " more";
    }
    throw Error(message);
}

}  // namespace vkf
