// The metadata of each llama.cpp architecture vkformer reads as a ModelConfig: what llama.cpp's
// converter (conversion/bloom.py, mpt.py, baichuan.py, jais.py) writes under "{arch}.*", and where a
// setting has no key, what the tensors say (a bias, qk_ln's norms, MPT's learned positions).

#include "host/spec/gguf_checkpoint.hpp"

#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"

namespace vkf {
namespace {

// Every Baichuan2 model has this vocabulary; vkformer's config.json reader (families/baichuan.cpp)
// recognizes Baichuan2's NormHead by it, and the GGUF says no more than config.json does.
constexpr std::uint32_t kBaichuan2Vocabulary = 125696;

// Baichuan-7B's block count: llama.cpp runs a `baichuan` file of 32 blocks with rotary positions.
constexpr std::uint64_t kBaichuan7bBlocks = 32;

class Keys {
public:
    Keys(const GgufFile& file, std::string architecture) : file_(file), arch_(std::move(architecture)) {}

    [[noreturn]] void fail(const std::string& problem) const {
        throw Error(fmt::format("{}: {}", file_.label(), problem));
    }
    std::string key(std::string_view name) const { return fmt::format("{}.{}", arch_, name); }
    bool has(std::string_view name) const { return file_.find(key(name)) != nullptr; }
    std::uint64_t uint(std::string_view name) const { return file_.uint_at(key(name)); }
    double number(std::string_view name) const { return file_.float_at(key(name)); }

    std::uint32_t dimension(std::string_view name) const { return checked(key(name), uint(name)); }
    std::uint32_t checked(std::string_view what, std::uint64_t value) const {
        if (value == 0 || value > std::numeric_limits<std::uint32_t>::max()) {
            fail(fmt::format("{} is {}, not a dimension vkformer can hold", what, value));
        }
        return static_cast<std::uint32_t>(value);
    }
    bool has_tensor(std::string_view name) const { return file_.find_tensor(name) != nullptr; }
    // Dimension `index` (the file's order: innermost first) of a matrix the model needs.
    std::uint32_t matrix_dim(std::string_view name, std::size_t index) const {
        const GgufTensorInfo& info = file_.tensor_at(name);
        if (info.dims.size() != 2) {
            fail(fmt::format("tensor '{}' has shape [{}], not a matrix", name, fmt::join(info.shape(), ", ")));
        }
        return checked(fmt::format("dimension {} of tensor '{}'", index, name), info.dims[index]);
    }

    // The sizes every architecture states the same way.
    void read_common(ModelConfig& config) const {
        config.hidden = dimension("embedding_length");
        config.n_layer = dimension("block_count");
        config.n_head = dimension("attention.head_count");
        config.n_kv_head = has("attention.head_count_kv") ? dimension("attention.head_count_kv") : config.n_head;
        if (config.hidden % config.n_head != 0) {
            fail(fmt::format("{} {} is not a multiple of {} {}", key("embedding_length"), config.hidden,
                             key("attention.head_count"), config.n_head));
        }
        config.head_dim = config.hidden / config.n_head;
        if (has("context_length")) {
            config.max_seq_len = dimension("context_length");
        }
        config.vocab_size = matrix_dim("token_embd.weight", 1);
        if (matrix_dim("token_embd.weight", 0) != config.hidden) {
            fail(fmt::format("tensor 'token_embd.weight' has rows of {}, not {} {}", matrix_dim("token_embd.weight", 0),
                             key("embedding_length"), config.hidden));
        }
        config.tie_word_embeddings = !has_tensor("output.weight");
    }

    void require_no_gqa(const ModelConfig& config, std::string_view family) const {
        if (config.n_kv_head != config.n_head) {
            fail(fmt::format("{} {} differs from head_count {}: {} has no grouped-query attention",
                             key("attention.head_count_kv"), config.n_kv_head, config.n_head, family));
        }
    }

private:
    const GgufFile& file_;
    std::string arch_;
};

ModelConfig bloom_config(const Keys& keys) {
    ModelConfig config{.family = ModelFamily::Bloom};
    keys.read_common(config);
    keys.require_no_gqa(config, "BLOOM");
    const std::uint64_t ffn = keys.uint("feed_forward_length");
    if (ffn != 4 * std::uint64_t{config.hidden}) {
        keys.fail(fmt::format("bloom.feed_forward_length {} is not 4 x bloom.embedding_length {} (BLOOM's MLP)", ffn,
                              config.hidden));
    }
    config.ffn_hidden = static_cast<std::uint32_t>(ffn);
    config.layer_norm_epsilon = keys.number("attention.layer_norm_epsilon");
    return config;
}

// conversion/mpt.py writes feed_forward_length as 4 x d_model whatever expansion_ratio was, and
// neither softmax_scale, logit_scale nor a sliding window: the MLP width is ffn_up's, and the
// rest is what llama.cpp runs (the defaults). max_alibi_bias 0 is a model without ALiBi.
ModelConfig mpt_config(const Keys& keys) {
    ModelConfig config{.family = ModelFamily::Mpt};
    keys.read_common(config);
    config.ffn_hidden = keys.matrix_dim("blk.0.ffn_up.weight", 1);
    config.layer_norm_epsilon = keys.number("attention.layer_norm_epsilon");
    if (keys.has("attention.clamp_kqv")) {
        config.clip_qkv = keys.number("attention.clamp_kqv");
    }
    const double bias_max = keys.has("attention.max_alibi_bias") ? keys.number("attention.max_alibi_bias") : 8.0;
    config.alibi = bias_max != 0.0;
    if (config.alibi) {
        config.alibi_bias_max = bias_max;
    }
    config.learned_pos_emb = keys.has_tensor("position_embd.weight");
    config.qk_ln = keys.has_tensor("blk.0.attn_q_norm.weight");
    config.no_bias = !keys.has_tensor("blk.0.attn_qkv.bias");
    return config;
}

// The ALiBi Baichuan-13B and Baichuan2-13B. A `baichuan` file does not say which positions its
// model uses; llama.cpp decides by the block count (32: Baichuan-7B with rotary positions, 40:
// the 13B with ALiBi), and vkformer refuses the 7B count.
ModelConfig baichuan_config(const Keys& keys) {
    ModelConfig config{.family = ModelFamily::Baichuan};
    if (keys.uint("block_count") == kBaichuan7bBlocks) {
        keys.fail(
            fmt::format("baichuan.block_count {} is Baichuan-7B's, which uses rotary positions (llama.cpp "
                        "runs a `baichuan` file of 32 blocks with RoPE); vkformer runs the ALiBi Baichuan-13B",
                        kBaichuan7bBlocks));
    }
    keys.read_common(config);
    keys.require_no_gqa(config, "Baichuan");
    config.ffn_hidden = keys.dimension("feed_forward_length");
    config.layer_norm_epsilon = keys.number("attention.layer_norm_rms_epsilon");
    config.no_bias = true;
    config.normalized_lm_head = config.vocab_size == kBaichuan2Vocabulary && !config.tie_word_embeddings;
    return config;
}

// conversion/jais.py multiplies token_embd by the embeddings scale and output by the width
// scale (muP), and llama.cpp divides q.k by head_dim and needs output: the model is the file's
// weights as they are, unscaled, untied. alibi_scaling has no key (llama.cpp runs without it);
// max_alibi_bias is what the converter derived from relative_pe.slopes, which are 8's.
ModelConfig jais_config(const Keys& keys) {
    ModelConfig config{.family = ModelFamily::Jais};
    keys.read_common(config);
    keys.require_no_gqa(config, "Jais");
    if (config.tie_word_embeddings) {
        keys.fail(
            "a jais file without 'output.weight': llama.cpp's jais needs one (its converter writes the LM "
            "head scaled by the muP width scale, which the embedding is not)");
    }
    config.ffn_hidden = keys.dimension("feed_forward_length");
    config.layer_norm_epsilon = keys.number("attention.layer_norm_epsilon");
    if (keys.has("attention.max_alibi_bias") && keys.number("attention.max_alibi_bias") != 8.0) {
        keys.fail(fmt::format("jais.attention.max_alibi_bias {} is not 8: Jais' ALiBi slopes are those of 8",
                              keys.number("attention.max_alibi_bias")));
    }
    config.softmax_scale = 1.0 / config.head_dim;
    return config;
}

// conversion/refact.py writes head_count_kv 1 and the MLP width it derived from n_embd, and no
// ALiBi key: llama.cpp's refact fixes max_alibi_bias at 8, as vkformer's Refact does.
ModelConfig refact_config(const Keys& keys) {
    ModelConfig config{.family = ModelFamily::Refact};
    keys.read_common(config);
    if (config.n_kv_head != 1) {
        keys.fail(fmt::format("{} is {}: Refact's attention has one K/V head", keys.key("attention.head_count_kv"),
                              config.n_kv_head));
    }
    config.ffn_hidden = keys.dimension("feed_forward_length");
    config.layer_norm_epsilon = keys.number("attention.layer_norm_rms_epsilon");
    config.no_bias = true;
    return config;
}

std::optional<std::uint32_t> token_id(const GgufFile& file, std::string_view key) {
    if (file.find(key) == nullptr) {
        return std::nullopt;
    }
    const std::uint64_t id = file.uint_at(key);
    if (id > std::numeric_limits<std::uint32_t>::max()) {
        throw Error(fmt::format("{}: {} {} is not a token id", file.label(), key, id));
    }
    return static_cast<std::uint32_t>(id);
}

}  // namespace

ModelConfig model_config_from_gguf(const GgufFile& file) {
    const std::string architecture = file.string_at("general.architecture");
    const Keys keys(file, architecture);
    ModelConfig config;
    if (architecture == "bloom") {
        config = bloom_config(keys);
    } else if (architecture == "mpt") {
        config = mpt_config(keys);
    } else if (architecture == "baichuan") {
        config = baichuan_config(keys);
    } else if (architecture == "jais") {
        config = jais_config(keys);
    } else if (architecture == "refact") {
        config = refact_config(keys);
    } else {
        keys.fail(
            fmt::format("GGUF architecture '{}' is not an ALiBi family vkformer runs (of llama.cpp's "
                        "architectures, vkformer reads {}{})",
                        architecture, "'bloom', 'mpt', 'baichuan', 'jais' and 'refact'",
                        is_gguf_encoder(file) ? "; this encoder is vkf-embed's" : ""));
    }
    config.bos_token_id = token_id(file, "tokenizer.ggml.bos_token_id");
    if (const auto eos = token_id(file, "tokenizer.ggml.eos_token_id")) {
        config.eos_token_ids = {*eos};
    }
    return config;
}

}  // namespace vkf
