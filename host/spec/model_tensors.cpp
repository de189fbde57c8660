#include "host/spec/model_tensors.hpp"

#include "host/io/safetensors.hpp"
#include "host/util/format.hpp"
#include "runtime/error.hpp"

namespace vkf {

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config) {
    validate(config);
    const std::size_t vocab = config.vocab_size;
    const std::size_t h = config.hidden;
    const std::size_t ffn = config.ffn_hidden;
    std::vector<ExpectedTensor> tensors;
    const auto add = [&](std::string name, std::vector<std::size_t> shape, TensorRole role) {
        tensors.push_back(ExpectedTensor{.name = std::move(name), .shape = std::move(shape), .role = role});
    };
    // A LayerNorm's weight and bias, or a Linear's weight [out, in] and bias [out].
    const auto norm = [&](const std::string& prefix, bool bias) {
        add(prefix + ".weight", {h}, TensorRole::NormWeight);
        if (bias) {
            add(prefix + ".bias", {h}, TensorRole::NormBias);
        }
    };
    const auto linear = [&](const std::string& prefix, std::size_t out, std::size_t in, bool bias) {
        add(prefix + ".weight", {out, in}, TensorRole::LinearWeight);
        if (bias) {
            add(prefix + ".bias", {out}, TensorRole::LinearBias);
        }
    };

    if (config.family == ModelFamily::Bloom) {
        add("word_embeddings.weight", {vocab, h}, TensorRole::Embedding);
        norm("word_embeddings_layernorm", true);
        for (std::uint32_t i = 0; i < config.n_layer; ++i) {
            const std::string layer = "h." + std::to_string(i);
            norm(layer + ".input_layernorm", true);
            linear(layer + ".self_attention.query_key_value", 3 * h, h, true);
            linear(layer + ".self_attention.dense", h, h, true);
            norm(layer + ".post_attention_layernorm", true);
            linear(layer + ".mlp.dense_h_to_4h", ffn, h, true);
            linear(layer + ".mlp.dense_4h_to_h", h, ffn, true);
        }
        norm("ln_f", true);
    } else {
        const bool bias = !config.no_bias;
        add("wte.weight", {vocab, h}, TensorRole::Embedding);
        for (std::uint32_t i = 0; i < config.n_layer; ++i) {
            const std::string block = "blocks." + std::to_string(i);
            norm(block + ".norm_1", bias);
            linear(block + ".attn.Wqkv", 3 * h, h, bias);
            linear(block + ".attn.out_proj", h, h, bias);
            norm(block + ".norm_2", bias);
            linear(block + ".ffn.up_proj", ffn, h, bias);
            linear(block + ".ffn.down_proj", h, ffn, bias);
        }
        norm("norm_f", bias);
    }
    if (!config.tie_word_embeddings) {
        add("lm_head.weight", {vocab, h}, TensorRole::LinearWeight);
    }
    return tensors;
}

std::string checkpoint_tensor_name(std::string_view name) {
    if (name.starts_with("lm_head.")) {
        return std::string(name);
    }
    return std::string(kTransformerPrefix) + std::string(name);
}

void check_checkpoint(const ShardedCheckpoint& checkpoint, const ModelConfig& config) {
    std::vector<std::string> problems;
    for (const ExpectedTensor& expected : expected_tensors(config)) {
        const CheckpointTensor* tensor = checkpoint.find(expected.name);
        if (tensor == nullptr) {
            problems.push_back("tensor '" + expected.name + "' (expected shape " + shape_text(expected.shape) +
                               ") is missing from every file (also looked for '" +
                               checkpoint_tensor_name(expected.name) + "')");
            continue;
        }
        const TensorInfo& info = *tensor->info;
        const std::string where =
            "safetensors file '" + tensor->file->path().string() + "': tensor '" + info.name + "': ";
        if (info.shape != expected.shape) {
            problems.push_back(where + "shape " + shape_text(info.shape) + " but the config expects " +
                               shape_text(expected.shape));
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
