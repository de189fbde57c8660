// llama.cpp's `jina-bert-v2` (conversion/bert.py's JinaBertV2Model: BertModel's keys and
// gguf-py's tensor names, nothing moved or scaled) as vkformer's JinaBERT encoder.

#include "host/spec/gguf_checkpoint.hpp"

#include <charconv>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"

namespace vkf {
namespace {

constexpr std::string_view kArchitecture = "jina-bert-v2";

std::uint32_t dimension(const GgufFile& file, std::string_view what, std::uint64_t value) {
    if (value == 0 || value > std::numeric_limits<std::uint32_t>::max()) {
        throw Error(fmt::format("{}: {} is {}, not a dimension vkformer can hold", file.label(), what, value));
    }
    return static_cast<std::uint32_t>(value);
}

std::uint32_t key_dimension(const GgufFile& file, std::string_view name) {
    const std::string key = fmt::format("{}.{}", kArchitecture, name);
    return dimension(file, key, file.uint_at(key));
}

// Dimension `index` (innermost first) of a matrix the encoder needs.
std::uint32_t matrix_dim(const GgufFile& file, std::string_view name, std::size_t index) {
    const GgufTensorInfo& info = file.tensor_at(name);
    if (info.dims.size() != 2) {
        throw Error(fmt::format("{}: tensor '{}' has shape [{}], not a matrix", file.label(), name,
                                fmt::join(info.shape(), ", ")));
    }
    return dimension(file, fmt::format("dimension {} of tensor '{}'", index, name), info.dims[index]);
}

// gguf-py's JINA_BERT_V2 names of the tensors vkformer's encoder reads.
constexpr std::pair<std::string_view, std::string_view> kWhole[] = {
    {"token_embd", "embeddings.word_embeddings"},
    {"token_types", "embeddings.token_type_embeddings"},
    {"token_embd_norm", "embeddings.LayerNorm"},
};
constexpr std::pair<std::string_view, std::string_view> kBlock[] = {
    {"attn_q", "attention.self.query"},
    {"attn_k", "attention.self.key"},
    {"attn_v", "attention.self.value"},
    {"attn_output", "attention.output.dense"},
    {"attn_output_norm", "attention.output.LayerNorm"},
    {"ffn_up", "mlp.gated_layers"},
    {"ffn_down", "mlp.wo"},
    {"layer_output_norm", "mlp.layernorm"},
};

}  // namespace

bool is_gguf_encoder(const GgufFile& file) {
    const GgufValue* architecture = file.find("general.architecture");
    return architecture != nullptr && architecture->type == GgufValueType::String &&
           architecture->as_string() == kArchitecture;
}

EncoderConfig encoder_config_from_gguf(const GgufFile& file) {
    const std::string architecture = file.string_at("general.architecture");
    if (architecture != kArchitecture) {
        throw Error(
            fmt::format("{}: GGUF architecture '{}' is not an encoder vkformer runs (of llama.cpp's "
                        "architectures, vkformer's encoder reads '{}')",
                        file.label(), architecture, kArchitecture));
    }
    const GgufValue* causal = file.find(fmt::format("{}.attention.causal", kArchitecture));
    if (causal != nullptr && causal->type == GgufValueType::Bool && causal->as_bool()) {
        throw Error(
            fmt::format("{}: {}.attention.causal is true: JinaBERT attends both ways", file.label(), kArchitecture));
    }
    EncoderConfig config;
    config.hidden = key_dimension(file, "embedding_length");
    config.n_layer = key_dimension(file, "block_count");
    config.n_head = key_dimension(file, "attention.head_count");
    if (config.hidden % config.n_head != 0) {
        throw Error(fmt::format("{}: {}.embedding_length {} is not a multiple of {}.attention.head_count {}",
                                file.label(), kArchitecture, config.hidden, kArchitecture, config.n_head));
    }
    config.head_dim = config.hidden / config.n_head;
    config.intermediate = key_dimension(file, "feed_forward_length");
    if (file.find(fmt::format("{}.context_length", kArchitecture)) != nullptr) {
        config.max_position_embeddings = key_dimension(file, "context_length");
    }
    config.layer_norm_eps = file.float_at(fmt::format("{}.attention.layer_norm_epsilon", kArchitecture));
    config.vocab_size = matrix_dim(file, "token_embd.weight", 1);
    config.type_vocab_size = matrix_dim(file, "token_types.weight", 1);
    return config;
}

std::optional<GgufTensorName> gguf_encoder_tensor_name(const EncoderConfig& config, std::string_view gguf_name) {
    std::string_view suffix;
    for (const std::string_view s : {".weight", ".bias"}) {
        if (gguf_name.ends_with(s)) {
            suffix = s;
        }
    }
    if (suffix.empty()) {
        return std::nullopt;
    }
    const std::string_view base = gguf_name.substr(0, gguf_name.size() - suffix.size());
    for (const auto& [gguf, hf] : kWhole) {
        if (base == gguf) {
            return GgufTensorName{.name = fmt::format("{}{}", hf, suffix)};
        }
    }
    if (!base.starts_with("blk.")) {
        return std::nullopt;
    }
    std::uint32_t layer = 0;
    const std::string_view rest = base.substr(4);
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
    const auto digits = static_cast<std::size_t>(end - rest.data());
    // Canonical numbers only: "blk.01" and "blk.1" must not both become layer 1.
    if (error != std::errc{} || digits == 0 || digits == rest.size() || rest[digits] != '.' ||
        rest.substr(0, digits) != fmt::to_string(layer) || layer >= config.n_layer) {
        return std::nullopt;
    }
    for (const auto& [gguf, hf] : kBlock) {
        if (rest.substr(digits + 1) == gguf) {
            return GgufTensorName{.name = fmt::format("encoder.layer.{}.{}{}", layer, hf, suffix)};
        }
    }
    return std::nullopt;
}

}  // namespace vkf
