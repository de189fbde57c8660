#include "host/quant/gguf_family_keys.hpp"

#include "base/error.hpp"
#include "host/io/gguf_keys.hpp"
#include "host/io/gguf_writer.hpp"
#include "host/io/json.hpp"

#include <fmt/format.h>

namespace vkf {
namespace {

namespace fs = std::filesystem;

// conversion/mpt.py's add_layer_norm_eps(1e-5): MPT's config.json states no epsilon.
constexpr float kMptLayerNormEpsilon = 1e-5F;

class Keys {
public:
    explicit Keys(std::string_view arch) : arch_(arch) {}
    void uint32(std::string_view suffix, std::uint32_t value) {
        keys_.push_back({gguf_key::arch_key(arch_, suffix), gguf_uint32(value)});
    }
    void float32(std::string_view suffix, double value) {
        keys_.push_back({gguf_key::arch_key(arch_, suffix), gguf_float32(static_cast<float>(value))});
    }
    void string(std::string_view suffix, std::string value) {
        keys_.push_back({gguf_key::arch_key(arch_, suffix), gguf_string(std::move(value))});
    }
    std::vector<GgufKeyValue> take() { return std::move(keys_); }

private:
    std::string_view arch_;
    std::vector<GgufKeyValue> keys_;
};

// conversion/bloom.py: the context length is config.json's seq_length, else the width.
std::vector<GgufKeyValue> bloom_keys(const JsonValue& json, const ModelConfig& config) {
    Keys keys("bloom");
    const JsonValue* seq = json.find("seq_length");
    keys.uint32(gguf_key::kContextLength,
                seq != nullptr && !seq->is_null() ? seq->as_integer<std::uint32_t>() : config.hidden);
    keys.uint32(gguf_key::kEmbeddingLength, config.hidden);
    keys.uint32(gguf_key::kFeedForwardLength, config.ffn_hidden);
    keys.uint32(gguf_key::kBlockCount, config.n_layer);
    keys.uint32(gguf_key::kHeadCount, config.n_head);
    keys.uint32(gguf_key::kHeadCountKv, config.n_kv_head);
    keys.float32(gguf_key::kLayerNormEpsilon, config.layer_norm_epsilon);
    return keys.take();
}

// conversion/mpt.py's set_gguf_parameters, from config.json's keys as it reads them.
std::vector<GgufKeyValue> mpt_keys(const JsonValue& json, const ModelConfig& config) {
    Keys keys("mpt");
    const JsonValue& attn = json.at("attn_config");
    keys.uint32(gguf_key::kContextLength, json.at("max_seq_len").as_integer<std::uint32_t>());
    keys.uint32(gguf_key::kEmbeddingLength, config.hidden);
    keys.uint32(gguf_key::kBlockCount, config.n_layer);
    keys.uint32(gguf_key::kFeedForwardLength, 4 * config.hidden);
    keys.uint32(gguf_key::kHeadCount, config.n_head);
    if (const JsonValue* kv = attn.find("kv_n_heads"); kv != nullptr && !kv->is_null() && kv->as_uint64() != 0) {
        keys.uint32(gguf_key::kHeadCountKv, config.n_kv_head);
    }
    keys.float32(gguf_key::kLayerNormEpsilon, kMptLayerNormEpsilon);
    if (config.clip_qkv) {
        keys.float32(gguf_key::kClampKqv, *config.clip_qkv);
    }
    keys.float32(gguf_key::kMaxAlibiBias, config.alibi ? config.alibi_bias_max : 0.0);
    return keys.take();
}

// conversion/refact.py: the MLP width derived from n_embd (2/3 of 4 x n_embd, rounded up to a
// multiple of 256), one K/V head, RMS norms.
std::vector<GgufKeyValue> refact_keys(const JsonValue& json, const ModelConfig& config) {
    Keys keys("refact");
    constexpr std::uint64_t kMultipleOf = 256;
    const std::uint64_t derived = 2 * (4 * std::uint64_t{config.hidden}) / 3;
    keys.uint32(gguf_key::kContextLength, json.at("n_positions").as_integer<std::uint32_t>());
    keys.uint32(gguf_key::kEmbeddingLength, config.hidden);
    keys.uint32(gguf_key::kFeedForwardLength,
                static_cast<std::uint32_t>(kMultipleOf * ((derived + kMultipleOf - 1) / kMultipleOf)));
    keys.uint32(gguf_key::kBlockCount, config.n_layer);
    keys.uint32(gguf_key::kHeadCount, config.n_head);
    keys.uint32(gguf_key::kHeadCountKv, 1);
    keys.float32(gguf_key::kLayerNormRmsEpsilon, json.at("layer_norm_epsilon").as_double());
    return keys.take();
}

// conversion/baichuan.py on base.py's TextModel.set_gguf_parameters, for the keys a Baichuan
// config.json has: the context length is the first of base.py's candidate keys present.
std::vector<GgufKeyValue> baichuan_keys(const JsonValue& json, const ModelConfig& config) {
    Keys keys("baichuan");
    keys.uint32(gguf_key::kBlockCount, config.n_layer);
    for (const std::string_view name :
         {"max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length", "model_max_length"}) {
        if (const JsonValue* n = json.find(name); n != nullptr && !n->is_null()) {
            keys.uint32(gguf_key::kContextLength, n->as_integer<std::uint32_t>());
            break;
        }
    }
    keys.uint32(gguf_key::kEmbeddingLength, config.hidden);
    keys.uint32(gguf_key::kFeedForwardLength, config.ffn_hidden);
    keys.uint32(gguf_key::kHeadCount, config.n_head);
    if (const JsonValue* kv = json.find("num_key_value_heads"); kv != nullptr && !kv->is_null()) {
        keys.uint32(gguf_key::kHeadCountKv, kv->as_integer<std::uint32_t>());
    }
    keys.float32(gguf_key::kLayerNormRmsEpsilon, json.at("rms_norm_eps").as_double());
    keys.string(gguf_key::kTensorDataLayout, "Meta AI original pth");
    keys.uint32(gguf_key::kRopeDimensionCount, config.hidden / config.n_head);
    return keys.take();
}

// conversion/jais.py: max_alibi_bias 8 (what it derives from relative_pe.slopes, 8's).
std::vector<GgufKeyValue> jais_keys(const JsonValue& json, const ModelConfig& config) {
    Keys keys("jais");
    keys.uint32(gguf_key::kBlockCount, config.n_layer);
    keys.uint32(gguf_key::kContextLength, json.at("n_positions").as_integer<std::uint32_t>());
    keys.uint32(gguf_key::kEmbeddingLength, config.hidden);
    keys.uint32(gguf_key::kFeedForwardLength, config.ffn_hidden);
    keys.uint32(gguf_key::kHeadCount, config.n_head);
    keys.float32(gguf_key::kLayerNormEpsilon, config.layer_norm_epsilon);
    keys.float32(gguf_key::kMaxAlibiBias, 8.0);
    return keys.take();
}

}  // namespace

std::string_view gguf_written_architecture(ModelFamily family) {
    switch (family) {
        case ModelFamily::Bloom:
            return "bloom";
        case ModelFamily::Mpt:
            return "mpt";
        case ModelFamily::Refact:
            return "refact";
        case ModelFamily::Baichuan:
            return "baichuan";
        case ModelFamily::Jais:
            return "jais";
        default:
            break;
    }
    throw Error(
        fmt::format("vkf-quantize writes GGUF for BLOOM, MPT, Refact, Baichuan and Jais (llama.cpp's 'bloom', "
                    "'mpt', 'refact', 'baichuan', 'jais'), not {}",
                    family_name(family)));
}

std::vector<GgufKeyValue> gguf_family_parameters(const fs::path& dir, const ModelConfig& config) {
    const JsonValue json = read_json_file(dir / "config.json");
    switch (config.family) {
        case ModelFamily::Mpt:
            return mpt_keys(json, config);
        case ModelFamily::Refact:
            return refact_keys(json, config);
        case ModelFamily::Baichuan:
            return baichuan_keys(json, config);
        case ModelFamily::Jais:
            return jais_keys(json, config);
        default:
            break;
    }
    return bloom_keys(json, config);
}

}  // namespace vkf
