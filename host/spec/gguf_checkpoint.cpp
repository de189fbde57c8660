#include "host/spec/gguf_checkpoint.hpp"

#include <charconv>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

namespace vkf {
namespace {

[[noreturn]] void fail(const GgufFile& file, const std::string& problem) {
    throw Error(fmt::format("{}: {}", file.label(), problem));
}

std::uint32_t dimension(const GgufFile& file, std::string_view key) {
    const std::uint64_t value = file.uint_at(key);
    if (value == 0 || value > std::numeric_limits<std::uint32_t>::max()) {
        fail(file, fmt::format("{} is {}, not a dimension vkformer can hold", key, value));
    }
    return static_cast<std::uint32_t>(value);
}

std::optional<std::uint32_t> token_id(const GgufFile& file, std::string_view key) {
    if (file.find(key) == nullptr) {
        return std::nullopt;
    }
    const std::uint64_t id = file.uint_at(key);
    if (id > std::numeric_limits<std::uint32_t>::max()) {
        fail(file, fmt::format("{} {} is not a token id", key, id));
    }
    return static_cast<std::uint32_t>(id);
}

// BLOOM's Hugging Face name of a llama.cpp tensor name (llama-arch.cpp's LLM_ARCH_BLOOM).
std::optional<std::string> hf_name(std::string_view name) {
    static const std::pair<std::string_view, std::string_view> kWhole[] = {
        {"token_embd.weight", "word_embeddings.weight"},
        {"token_embd_norm.weight", "word_embeddings_layernorm.weight"},
        {"token_embd_norm.bias", "word_embeddings_layernorm.bias"},
        {"output_norm.weight", "ln_f.weight"},
        {"output_norm.bias", "ln_f.bias"},
        {"output.weight", "lm_head.weight"},
    };
    for (const auto& [gguf, hf] : kWhole) {
        if (name == gguf) {
            return std::string(hf);
        }
    }
    static const std::pair<std::string_view, std::string_view> kBlock[] = {
        {"attn_norm", "input_layernorm"},        {"attn_qkv", "self_attention.query_key_value"},
        {"attn_output", "self_attention.dense"}, {"ffn_norm", "post_attention_layernorm"},
        {"ffn_up", "mlp.dense_h_to_4h"},         {"ffn_down", "mlp.dense_4h_to_h"},
    };
    if (!name.starts_with("blk.")) {
        return std::nullopt;
    }
    std::string_view rest = name.substr(4);
    std::uint32_t layer = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
    // Canonical numbers only: "blk.01" and "blk.1" must not both become h.1.
    if (error != std::errc{} || end == rest.data() || *end != '.' ||
        std::string_view(rest.data(), static_cast<std::size_t>(end - rest.data())) != fmt::to_string(layer)) {
        return std::nullopt;
    }
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()) + 1);
    for (const auto& [gguf, hf] : kBlock) {
        for (const std::string_view suffix : {".weight", ".bias"}) {
            if (rest.size() == gguf.size() + suffix.size() && rest.starts_with(gguf) && rest.ends_with(suffix)) {
                return fmt::format("h.{}.{}{}", layer, hf, suffix);
            }
        }
    }
    return std::nullopt;
}

// llama.cpp stores BLOOM's fused QKV rows as [q | k | v] (each [n_head, head_dim]); BLOOM's
// own order is [n_head, 3, head_dim]. Entry r is the stored row of BLOOM's row r.
std::vector<std::uint32_t> bloom_qkv_rows(const ModelConfig& config) {
    std::vector<std::uint32_t> order(3 * std::size_t{config.n_head} * config.head_dim);
    for (std::uint32_t part = 0; part < 3; ++part) {
        for (std::uint32_t head = 0; head < config.n_head; ++head) {
            for (std::uint32_t d = 0; d < config.head_dim; ++d) {
                order[(std::size_t{head} * 3 + part) * config.head_dim + d] =
                    (part * config.n_head + head) * config.head_dim + d;
            }
        }
    }
    return order;
}

}  // namespace

ModelConfig model_config_from_gguf(const GgufFile& file) {
    const std::string architecture = file.string_at("general.architecture");
    if (architecture != "bloom") {
        fail(file, fmt::format("GGUF architecture '{}' is not an ALiBi family vkformer runs (of llama.cpp's "
                               "architectures, vkformer reads 'bloom')",
                               architecture));
    }
    ModelConfig config{.family = ModelFamily::Bloom};
    config.hidden = dimension(file, "bloom.embedding_length");
    config.n_layer = dimension(file, "bloom.block_count");
    config.n_head = dimension(file, "bloom.attention.head_count");
    config.n_kv_head = config.n_head;
    if (file.find("bloom.attention.head_count_kv") != nullptr &&
        file.uint_at("bloom.attention.head_count_kv") != config.n_head) {
        fail(file, fmt::format("bloom.attention.head_count_kv {} differs from head_count {}: BLOOM has no "
                               "grouped-query attention",
                               file.uint_at("bloom.attention.head_count_kv"), config.n_head));
    }
    if (config.hidden % config.n_head != 0) {
        fail(file, fmt::format("bloom.embedding_length {} is not a multiple of bloom.attention.head_count {}",
                               config.hidden, config.n_head));
    }
    config.head_dim = config.hidden / config.n_head;
    const std::uint64_t ffn = file.uint_at("bloom.feed_forward_length");
    if (ffn != 4 * std::uint64_t{config.hidden}) {
        fail(file, fmt::format("bloom.feed_forward_length {} is not 4 x bloom.embedding_length {} (BLOOM's MLP)", ffn,
                               config.hidden));
    }
    config.ffn_hidden = static_cast<std::uint32_t>(ffn);
    config.layer_norm_epsilon = file.float_at("bloom.attention.layer_norm_epsilon");
    if (file.find("bloom.context_length") != nullptr) {
        config.max_seq_len = dimension(file, "bloom.context_length");
    }
    const GgufTensorInfo& embedding = file.tensor_at("token_embd.weight");
    if (embedding.dims.size() != 2 || embedding.dims[0] != config.hidden || embedding.dims[1] == 0 ||
        embedding.dims[1] > std::numeric_limits<std::uint32_t>::max()) {
        fail(file, fmt::format("tensor 'token_embd.weight' has shape [{}], expected [vocabulary, {}]",
                               fmt::join(embedding.shape(), ", "), config.hidden));
    }
    config.vocab_size = static_cast<std::uint32_t>(embedding.dims[1]);
    config.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;
    config.bos_token_id = token_id(file, "tokenizer.ggml.bos_token_id");
    if (const auto eos = token_id(file, "tokenizer.ggml.eos_token_id")) {
        config.eos_token_ids = {*eos};
    }
    return config;
}

std::optional<GgufTensorName> gguf_tensor_name(const ModelConfig& config, std::string_view gguf_name) {
    if (config.family != ModelFamily::Bloom) {
        return std::nullopt;
    }
    std::optional<std::string> name = hf_name(gguf_name);
    if (!name) {
        return std::nullopt;
    }
    const bool qkv = name->ends_with("self_attention.query_key_value.weight") ||
                     name->ends_with("self_attention.query_key_value.bias");
    return GgufTensorName{.name = std::move(*name),
                          .row_order = qkv ? &bloom_qkv_rows : nullptr,
                          .rows = qkv ? 3 * std::uint64_t{config.n_head} * config.head_dim : 0};
}

std::string_view gguf_architecture_label(ModelFamily family) {
    return family == ModelFamily::Bloom ? "BLOOM" : family_name(family);
}

}  // namespace vkf
