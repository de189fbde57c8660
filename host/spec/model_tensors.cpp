#include "host/spec/model_tensors.hpp"

#include "host/io/safetensors.hpp"
#include "host/util/format.hpp"
#include "runtime/error.hpp"

namespace vkf {

std::vector<std::size_t> ExpectedTensor::stored_shape() const {
    return transposed ? std::vector<std::size_t>(shape.rbegin(), shape.rend()) : shape;
}

namespace {

// The names of one family's tensors.
struct TensorNames {
    std::string embedding, position_embedding, embedding_norm;
    std::string layer_prefix;  // + layer index + "."
    std::string attn_norm, qkv, q_norm, k_norm, attn_out, mlp_norm, up, gate, down;
    std::string final_norm;
    bool conv1d = false;  // linear weights stored [in, out]
};

TensorNames names_of(ModelFamily family) {
    switch (family) {
        case ModelFamily::Bloom:
            return {.embedding = "word_embeddings",
                    .embedding_norm = "word_embeddings_layernorm",
                    .layer_prefix = "h.",
                    .attn_norm = "input_layernorm",
                    .qkv = "self_attention.query_key_value",
                    .attn_out = "self_attention.dense",
                    .mlp_norm = "post_attention_layernorm",
                    .up = "mlp.dense_h_to_4h",
                    .down = "mlp.dense_4h_to_h",
                    .final_norm = "ln_f"};
        case ModelFamily::Mpt:
            return {.embedding = "wte",
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
                    .final_norm = "norm_f"};
        case ModelFamily::Falcon:
            return {.embedding = "word_embeddings",
                    .layer_prefix = "h.",
                    .attn_norm = "input_layernorm",
                    .qkv = "self_attention.query_key_value",
                    .attn_out = "self_attention.dense",
                    .mlp_norm = "post_attention_layernorm",
                    .up = "mlp.dense_h_to_4h",
                    .down = "mlp.dense_4h_to_h",
                    .final_norm = "ln_f"};
        case ModelFamily::Baichuan:
            return {.embedding = "model.embed_tokens",
                    .layer_prefix = "model.layers.",
                    .attn_norm = "input_layernorm",
                    .qkv = "self_attn.W_pack",
                    .attn_out = "self_attn.o_proj",
                    .mlp_norm = "post_attention_layernorm",
                    .up = "mlp.up_proj",
                    .gate = "mlp.gate_proj",
                    .down = "mlp.down_proj",
                    .final_norm = "model.norm"};
        case ModelFamily::Jais:
            return {.embedding = "wte",
                    .layer_prefix = "h.",
                    .attn_norm = "ln_1",
                    .qkv = "attn.c_attn",
                    .attn_out = "attn.c_proj",
                    .mlp_norm = "ln_2",
                    .up = "mlp.c_fc",
                    .gate = "mlp.c_fc2",
                    .down = "mlp.c_proj",
                    .final_norm = "ln_f",
                    .conv1d = true};
    }
    throw Error("model tensors: unknown family");
}

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config) {
    validate(config);
    const FamilyTraits traits = family_traits(config.family);
    const TensorNames names = names_of(config.family);
    const std::size_t vocab = config.vocab_size;
    const std::size_t h = config.hidden;
    const std::size_t kv = std::size_t{config.n_kv_head} * config.head_dim;
    const std::size_t ffn = config.ffn_hidden;
    const bool linear_bias = has_linear_bias(config);
    const bool norm_bias = has_norm_bias(config);
    std::vector<ExpectedTensor> tensors;
    const auto add = [&](std::string name, std::vector<std::size_t> shape, TensorRole role, TensorSlot slot,
                         std::uint32_t layer, bool bias = false, bool transposed = false) {
        tensors.push_back(ExpectedTensor{.name = std::move(name),
                                         .shape = std::move(shape),
                                         .role = role,
                                         .slot = slot,
                                         .layer = layer,
                                         .bias = bias,
                                         .transposed = transposed});
    };
    // A norm's weight (and bias), or a linear layer's weight [out, in] and bias [out].
    const auto norm = [&](const std::string& prefix, std::size_t dim, TensorSlot slot, std::uint32_t layer) {
        add(prefix + ".weight", {dim}, TensorRole::NormWeight, slot, layer);
        if (norm_bias) {
            add(prefix + ".bias", {dim}, TensorRole::NormBias, slot, layer, true);
        }
    };
    const auto linear = [&](const std::string& prefix, std::size_t out, std::size_t in, TensorSlot slot,
                            std::uint32_t layer) {
        add(prefix + ".weight", {out, in}, TensorRole::LinearWeight, slot, layer, false, names.conv1d);
        if (linear_bias) {
            add(prefix + ".bias", {out}, TensorRole::LinearBias, slot, layer, true);
        }
    };

    add(names.embedding + ".weight", {vocab, h}, TensorRole::Embedding, TensorSlot::Embedding, 0);
    if (config.learned_pos_emb) {
        add(names.position_embedding + ".weight", {config.max_seq_len, h}, TensorRole::PositionEmbedding,
            TensorSlot::PositionEmbedding, 0);
    }
    if (traits.embedding_norm) {
        norm(names.embedding_norm, h, TensorSlot::EmbeddingNorm, 0);
    }
    for (std::uint32_t i = 0; i < config.n_layer; ++i) {
        const std::string p = names.layer_prefix + std::to_string(i) + ".";
        norm(p + names.attn_norm, h, TensorSlot::AttnNorm, i);
        linear(p + names.qkv, h + 2 * kv, h, TensorSlot::Qkv, i);
        if (config.qk_ln) {
            norm(p + names.q_norm, h, TensorSlot::QNorm, i);
            norm(p + names.k_norm, kv, TensorSlot::KNorm, i);
        }
        linear(p + names.attn_out, h, h, TensorSlot::AttnOut, i);
        norm(p + names.mlp_norm, h, TensorSlot::MlpNorm, i);
        if (traits.mlp == MlpKind::Gated) {
            linear(p + names.gate, ffn, h, TensorSlot::Gate, i);
        }
        linear(p + names.up, ffn, h, TensorSlot::Up, i);
        linear(p + names.down, h, ffn, TensorSlot::Down, i);
    }
    norm(names.final_norm, h, TensorSlot::FinalNorm, 0);
    if (!config.tie_word_embeddings) {
        // Always stored [vocab, hidden]: even Jais' head is a Linear.
        add("lm_head.weight", {vocab, h}, TensorRole::LinearWeight, TensorSlot::LmHead, 0);
    }
    return tensors;
}

ModelConfig resolve_with_checkpoint(ModelConfig config, const ShardedCheckpoint& checkpoint) {
    if (config.family == ModelFamily::Mpt && !config.learned_pos_emb && config.alibi &&
        checkpoint.find(names_of(config.family).position_embedding + ".weight") != nullptr) {
        config.learned_pos_emb = true;
    }
    return config;
}

std::vector<float> read_tensor_f32(const ShardedCheckpoint& checkpoint, const ExpectedTensor& tensor) {
    std::vector<float> values = checkpoint.read_as_f32(tensor.name);
    if (!tensor.transposed) {
        return values;
    }
    const std::size_t out = tensor.shape.at(0), in = tensor.shape.at(1);
    if (values.size() != out * in) {
        throw Error("checkpoint '" + checkpoint.source().string() + "': tensor '" + tensor.name + "' holds " +
                    std::to_string(values.size()) + " values, not " + shape_text(tensor.stored_shape()));
    }
    std::vector<float> turned(values.size());
    for (std::size_t i = 0; i < in; ++i) {
        for (std::size_t o = 0; o < out; ++o) {
            turned[o * in + i] = values[i * out + o];
        }
    }
    return turned;
}

std::string checkpoint_tensor_name(std::string_view name) {
    if (name.starts_with("lm_head.") || name.starts_with("model.")) {
        return std::string(name);
    }
    return std::string(kTransformerPrefix) + std::string(name);
}

void check_checkpoint(const ShardedCheckpoint& checkpoint, const ModelConfig& config) {
    std::vector<std::string> problems;
    for (const ExpectedTensor& expected : expected_tensors(config)) {
        const CheckpointTensor* tensor = checkpoint.find(expected.name);
        if (tensor == nullptr) {
            problems.push_back("tensor '" + expected.name + "' (expected shape " + shape_text(expected.stored_shape()) +
                               ") is missing from every file (also looked for '" +
                               checkpoint_tensor_name(expected.name) + "')");
            continue;
        }
        const TensorInfo& info = *tensor->info;
        const std::string where =
            "safetensors file '" + tensor->file->path().string() + "': tensor '" + info.name + "': ";
        if (info.shape != expected.stored_shape()) {
            problems.push_back(where + "shape " + shape_text(info.shape) + " but the config expects " +
                               shape_text(expected.stored_shape()) +
                               (expected.transposed ? " (stored [in, out], as GPT-2's Conv1D)" : ""));
        }
        if (!is_supported_float(info.dtype)) {
            problems.push_back(where + "dtype " + std::string(dtype_name(info.dtype)) +
                               " is not one vkformer reads (F32, F16, BF16)");
        }
    }
    throw_if_problems("checkpoint '" + checkpoint.source().string() + "'", config, problems);
}

void throw_if_problems(std::string_view subject, const ModelConfig& config, const std::vector<std::string>& problems) {
    constexpr std::size_t kMaxListed = 20;
    if (problems.empty()) {
        return;
    }
    std::string message = std::string(subject) + " does not match the " + std::string(family_name(config.family)) +
                          " config (" + std::to_string(problems.size()) +
                          (problems.size() == 1 ? " problem):" : " problems):");
    for (std::size_t i = 0; i < problems.size() && i < kMaxListed; ++i) {
        message += "\n  " + problems[i];
    }
    if (problems.size() > kMaxListed) {
        message += "\n  ... and " + std::to_string(problems.size() - kMaxListed) + " more";
    }
    throw Error(message);
}

}  // namespace vkf
