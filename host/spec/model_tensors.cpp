#include "host/spec/model_tensors.hpp"

#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/family_spec.hpp"

#include <fmt/format.h>

namespace vkf {

std::vector<std::size_t> ExpectedTensor::stored_shape() const {
    return transposed ? std::vector<std::size_t>(shape.rbegin(), shape.rend()) : shape;
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config) {
    validate(config);
    const FamilySpec& spec = family_spec(config.family);
    const FamilyTraits& traits = spec.traits;
    const FamilyTensorNames& names = spec.tensors;
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
    const auto norm = [&](std::string_view prefix, std::size_t dim, TensorSlot slot, std::uint32_t layer) {
        add(std::string(prefix) + ".weight", {dim}, TensorRole::NormWeight, slot, layer);
        if (norm_bias) {
            add(std::string(prefix) + ".bias", {dim}, TensorRole::NormBias, slot, layer, true);
        }
    };
    const auto linear = [&](std::string_view prefix, std::size_t out, std::size_t in, TensorSlot slot,
                            std::uint32_t layer) {
        add(std::string(prefix) + ".weight", {out, in}, TensorRole::LinearWeight, slot, layer, false, names.conv1d);
        if (linear_bias) {
            add(std::string(prefix) + ".bias", {out}, TensorRole::LinearBias, slot, layer, true);
        }
    };

    add(std::string(names.embedding) + ".weight", {vocab, h}, TensorRole::Embedding, TensorSlot::Embedding, 0);
    if (config.learned_pos_emb) {
        add(std::string(names.position_embedding) + ".weight", {config.max_seq_len, h}, TensorRole::PositionEmbedding,
            TensorSlot::PositionEmbedding, 0);
    }
    if (traits.embedding_norm) {
        norm(names.embedding_norm, h, TensorSlot::EmbeddingNorm, 0);
    }
    for (std::uint32_t i = 0; i < config.n_layer; ++i) {
        const std::string p = std::string(names.layer_prefix) + fmt::to_string(i) + ".";
        norm(p + std::string(names.attn_norm), h, TensorSlot::AttnNorm, i);
        linear(p + std::string(names.qkv), h + 2 * kv, h, TensorSlot::Qkv, i);
        if (config.qk_ln) {
            norm(p + std::string(names.q_norm), h, TensorSlot::QNorm, i);
            norm(p + std::string(names.k_norm), kv, TensorSlot::KNorm, i);
        }
        linear(p + std::string(names.attn_out), h, h, TensorSlot::AttnOut, i);
        norm(p + std::string(names.mlp_norm), h, TensorSlot::MlpNorm, i);
        if (traits.mlp == MlpKind::Gated) {
            linear(p + std::string(names.gate), ffn, h, TensorSlot::Gate, i);
        }
        linear(p + std::string(names.up), ffn, h, TensorSlot::Up, i);
        linear(p + std::string(names.down), h, ffn, TensorSlot::Down, i);
    }
    norm(names.final_norm, h, TensorSlot::FinalNorm, 0);
    if (!config.tie_word_embeddings) {
        // Always stored [vocab, hidden]: even Jais' head is a Linear.
        add("lm_head.weight", {vocab, h}, TensorRole::LinearWeight, TensorSlot::LmHead, 0);
    }
    return tensors;
}

ModelConfig resolve_with_checkpoint(ModelConfig config, const ShardedCheckpoint& checkpoint) {
    const std::string_view wpe = family_spec(config.family).tensors.position_embedding;
    if (!wpe.empty() && !config.learned_pos_emb && config.alibi &&
        checkpoint.find(std::string(wpe) + ".weight") != nullptr) {
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
                    fmt::to_string(values.size()) + " values, not " + shape_text(tensor.stored_shape()));
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
        const std::string where = tensor->file->label() + ": tensor '" + info.name + "': ";
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
    throw_if_problems(subject, family_name(config.family), problems);
}

void throw_if_problems(std::string_view subject, std::string_view family, const std::vector<std::string>& problems) {
    constexpr std::size_t kMaxListed = 20;
    if (problems.empty()) {
        return;
    }
    std::string message = std::string(subject) + " does not match the " + std::string(family) + " config (" +
                          fmt::to_string(problems.size()) + (problems.size() == 1 ? " problem):" : " problems):");
    for (std::size_t i = 0; i < problems.size() && i < kMaxListed; ++i) {
        message += "\n  " + problems[i];
    }
    if (problems.size() > kMaxListed) {
        message += "\n  ... and " + fmt::to_string(problems.size() - kMaxListed) + " more";
    }
    throw Error(message);
}

}  // namespace vkf
