#include "host/spec/gguf_checkpoint.hpp"

#include <charconv>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "host/spec/model_tensors.hpp"

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

std::optional<DType> dtype_of(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
            return DType::F32;
        case GgmlType::F16:
            return DType::F16;
        case GgmlType::BF16:
            return DType::BF16;
        default:
            return std::nullopt;
    }
}

// llama.cpp stores BLOOM's fused QKV rows as [q | k | v] (each [n_head, head_dim]); BLOOM's
// own order is [n_head, 3, head_dim]. `bytes` holds 3 * hidden rows of row_bytes each.
std::vector<std::byte> bloom_qkv_order(const std::vector<std::byte>& bytes, std::uint32_t n_head,
                                       std::uint32_t head_dim, std::size_t row_bytes) {
    std::vector<std::byte> out(bytes.size());
    for (std::size_t part = 0; part < 3; ++part) {
        for (std::size_t head = 0; head < n_head; ++head) {
            for (std::size_t d = 0; d < head_dim; ++d) {
                const std::size_t from = (part * n_head + head) * head_dim + d;
                const std::size_t to = (head * 3 + part) * head_dim + d;
                std::memcpy(out.data() + to * row_bytes, bytes.data() + from * row_bytes, row_bytes);
            }
        }
    }
    return out;
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

void write_checkpoint_from_gguf(const GgufFile& file, const std::filesystem::path& dir) {
    const ModelConfig config = model_config_from_gguf(file);
    std::vector<RawTensorSource> tensors;
    bool all_f16 = true;
    for (const GgufTensorInfo& info : file.tensors()) {
        const std::optional<std::string> name = hf_name(info.name);
        if (!name) {
            fail(file, fmt::format("tensor '{}' is not one of llama.cpp's BLOOM tensors", info.name));
        }
        const std::optional<DType> dtype = dtype_of(info.type);
        if (!dtype) {
            fail(file, fmt::format("tensor '{}' is of type {}, which vkformer does not read from GGUF files "
                                   "(F32, F16 and BF16 are read)",
                                   info.name, ggml_type_name(info.type)));
        }
        all_f16 = all_f16 && (*dtype == DType::F16 || info.dims.size() == 1);
        std::vector<std::size_t> shape;
        for (const std::uint64_t d : info.shape()) {
            shape.push_back(static_cast<std::size_t>(d));
        }
        const bool qkv = name->ends_with("self_attention.query_key_value.weight") ||
                         name->ends_with("self_attention.query_key_value.bias");
        if (qkv && (shape.empty() || shape[0] != 3 * std::size_t{config.hidden})) {
            fail(file, fmt::format("tensor '{}' has shape [{}]; its first dimension must be 3 x {}", info.name,
                                   fmt::join(shape, ", "), config.hidden));
        }
        const GgufTensorInfo* source = &info;
        tensors.push_back(RawTensorSource{.name = *name,
                                          .dtype = *dtype,
                                          .shape = shape,
                                          .bytes = [&file, source, qkv, &config](std::span<std::byte> out) {
                                              if (!qkv) {
                                                  file.read_raw_into(*source, 0, out);
                                                  return;
                                              }
                                              const std::vector<std::byte> stored = file.read_raw(*source);
                                              const std::vector<std::byte> bloom =
                                                  bloom_qkv_order(stored, config.n_head, config.head_dim,
                                                                  stored.size() / (3 * config.hidden));
                                              std::memcpy(out.data(), bloom.data(), out.size());
                                          }});
    }
    std::filesystem::create_directories(dir);
    write_text_file(dir / "config.json", hf_config_json(config, all_f16 ? DType::F16 : DType::F32));
    if (const std::optional<std::string> tokenizer = tokenizer_json_from_gguf(file)) {
        write_text_file(dir / "tokenizer.json", *tokenizer);
    }
    write_safetensors_file(dir / "model.safetensors", tensors, {{"format", "pt"}, {"vkformer.source", "gguf"}});
    // Missing or misshapen tensors are named here, with the GGUF file, rather than later by
    // the loader, whose messages would name only the converted directory.
    try {
        check_checkpoint(open_checkpoint(dir), read_model_config(dir));
    } catch (const Error& e) {
        fail(file, fmt::format("as a BLOOM checkpoint: {}", e.what()));
    }
}

}  // namespace vkf
