#include "host/reference/model.hpp"

#include "host/io/safetensors.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/reference/attention.hpp"
#include "host/reference/ops.hpp"
#include "host/spec/model_tensors.hpp"
#include "host/util/half.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

namespace vkf::reference {

namespace {

struct RefLinear {
    std::vector<float> weight;  // [out, in]
    std::vector<float> bias;    // [out], or empty
    std::uint32_t out = 0;
    std::uint32_t in = 0;
};

struct RefNorm {
    std::vector<float> weight;  // [dim]
    std::vector<float> bias;    // [dim], or empty
};

struct RefBlock {
    RefNorm norm_1;  // BLOOM input_layernorm
    RefLinear qkv;
    RefLinear out;   // BLOOM self_attention.dense
    RefNorm norm_2;  // BLOOM post_attention_layernorm
    RefLinear up;    // BLOOM mlp.dense_h_to_4h
    RefLinear down;  // BLOOM mlp.dense_4h_to_h
};

std::vector<double> linear(std::span<const double> x, std::uint32_t m, const RefLinear& layer, unsigned threads) {
    return reference::linear(x, layer.weight, layer.bias, m, layer.out, layer.in, threads);
}

std::vector<double> layer_norm(std::span<const double> x, std::uint32_t rows, std::uint32_t dim, const RefNorm& norm,
                               double eps) {
    return layernorm(x, norm.weight, norm.bias, rows, dim, eps);
}

void add_in_place(std::vector<double>& y, std::span<const double> residual) {
    for (std::size_t i = 0; i < y.size(); ++i) {
        y[i] += residual[i];
    }
}

}  // namespace

struct Model::Weights {
    std::vector<float> embedding;  // [vocab, hidden]
    RefNorm embedding_norm;        // BLOOM only
    std::vector<RefBlock> blocks;
    RefNorm final_norm;
    RefLinear lm_head;  // empty when tied to the embedding
};

namespace {

class WeightReader {
public:
    WeightReader(const ShardedCheckpoint& checkpoint, const ModelConfig& config, const ModelOptions& options)
        : checkpoint_(checkpoint),
          format_(check_model_checkpoint(checkpoint, config)),
          round_to_f16_(options.round_weights_to_f16),
          quantize_(options.quantize) {
        for (ExpectedTensor& tensor : expected_tensors(config)) {
            expected_.emplace(tensor.name, tensor);
        }
    }

    std::vector<float> read(const std::string& name) const {
        const auto expected = expected_.find(name);
        if (expected == expected_.end()) {
            throw Error("reference model: internal error: tensor '" + name + "' is not expected by the config");
        }
        const ExpectedTensor& e = expected->second;
        std::vector<float> values = read_weights_f32(checkpoint_, e, format_);
        std::size_t elements = 1;
        for (std::size_t d : e.shape) {
            elements *= d;
        }
        if (values.size() != elements) {
            throw Error("reference model: tensor '" + name + "' of checkpoint '" + checkpoint_.source().string() +
                        "' holds " + std::to_string(values.size()) + " elements; the config needs " +
                        std::to_string(elements));
        }
        const bool matrix = quantized_role(e.role);
        if (matrix && format_ == QuantFormat::None && quantize_ != QuantFormat::None) {
            // What a GPU model quantized at load time reads: the exact dequantized blocks.
            const QuantizedMatrix q = quantize_matrix(quantize_, values, e.shape[0], e.shape[1], name);
            values = dequantize_matrix(quantize_, q.values, q.scales, e.shape[0], e.shape[1]);
        } else if (round_to_f16_ && !(matrix && format_ != QuantFormat::None)) {
            for (float& v : values) {
                v = half_to_float(float_to_half(v));
            }
        }
        return values;
    }

    RefNorm norm(const std::string& prefix, bool bias) const {
        RefNorm n;
        n.weight = read(prefix + ".weight");
        if (bias) {
            n.bias = read(prefix + ".bias");
        }
        return n;
    }

    RefLinear linear(const std::string& prefix, std::uint32_t out, std::uint32_t in, bool bias) const {
        RefLinear l;
        l.weight = read(prefix + ".weight");
        if (bias) {
            l.bias = read(prefix + ".bias");
        }
        l.out = out;
        l.in = in;
        return l;
    }

private:
    const ShardedCheckpoint& checkpoint_;
    QuantFormat format_;  // of the checkpoint
    bool round_to_f16_;
    QuantFormat quantize_;
    std::unordered_map<std::string, ExpectedTensor> expected_;
};

}  // namespace

Model::Model(const ModelConfig& config, const ShardedCheckpoint& checkpoint, ModelOptions options)
    : config_(config), options_(std::move(options)) {
    validate(config_);
    if (options_.threads == 0) {
        options_.threads = std::max(1u, std::thread::hardware_concurrency());
    }

    const WeightReader reader(checkpoint, config_, options_);
    auto weights = std::make_unique<Weights>();
    const std::uint32_t h = config_.hidden;
    const std::uint32_t ffn = config_.ffn_hidden;
    const bool bloom = config_.family == ModelFamily::Bloom;
    const bool bias = bloom || !config_.no_bias;

    weights->embedding = reader.read(bloom ? "word_embeddings.weight" : "wte.weight");
    if (bloom) {
        weights->embedding_norm = reader.norm("word_embeddings_layernorm", true);
    }
    weights->blocks.reserve(config_.n_layer);
    for (std::uint32_t i = 0; i < config_.n_layer; ++i) {
        RefBlock b;
        if (bloom) {
            const std::string p = "h." + std::to_string(i);
            b.norm_1 = reader.norm(p + ".input_layernorm", true);
            b.qkv = reader.linear(p + ".self_attention.query_key_value", 3 * h, h, true);
            b.out = reader.linear(p + ".self_attention.dense", h, h, true);
            b.norm_2 = reader.norm(p + ".post_attention_layernorm", true);
            b.up = reader.linear(p + ".mlp.dense_h_to_4h", ffn, h, true);
            b.down = reader.linear(p + ".mlp.dense_4h_to_h", h, ffn, true);
        } else {
            const std::string p = "blocks." + std::to_string(i);
            b.norm_1 = reader.norm(p + ".norm_1", bias);
            b.qkv = reader.linear(p + ".attn.Wqkv", 3 * h, h, bias);
            b.out = reader.linear(p + ".attn.out_proj", h, h, bias);
            b.norm_2 = reader.norm(p + ".norm_2", bias);
            b.up = reader.linear(p + ".ffn.up_proj", ffn, h, bias);
            b.down = reader.linear(p + ".ffn.down_proj", h, ffn, bias);
        }
        weights->blocks.push_back(std::move(b));
    }
    weights->final_norm = reader.norm(bloom ? "ln_f" : "norm_f", bias);
    if (!config_.tie_word_embeddings) {
        weights->lm_head = reader.linear("lm_head", config_.vocab_size, h, false);
    }

    weights_ = std::move(weights);
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

std::vector<double> Model::forward(std::span<const std::uint32_t> ids) const {
    const ModelConfig& c = config_;
    const Weights& w = *weights_;
    const bool bloom = c.family == ModelFamily::Bloom;
    const unsigned threads = options_.threads;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        if (ids[t] >= c.vocab_size) {
            throw Error("reference model: token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) +
                        " is out of range for vocab_size " + std::to_string(c.vocab_size));
        }
    }
    const auto tokens = static_cast<std::uint32_t>(ids.size());
    if (tokens == 0) {
        return {};
    }
    const std::size_t h = c.hidden;
    const std::size_t d = c.head_dim;

    std::vector<double> x(tokens * h);
    for (std::size_t t = 0; t < tokens; ++t) {
        const float* row = w.embedding.data() + std::size_t{ids[t]} * h;
        for (std::size_t i = 0; i < h; ++i) {
            x[t * h + i] = static_cast<double>(row[i]);
        }
    }
    if (bloom) {
        x = layer_norm(x, tokens, c.hidden, w.embedding_norm, c.layer_norm_epsilon);
    }

    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (std::uint32_t layer = 0; layer < c.n_layer; ++layer) {
        const RefBlock& b = w.blocks[layer];
        const std::vector<double> normed = layer_norm(x, tokens, c.hidden, b.norm_1, c.layer_norm_epsilon);
        std::vector<double> qkv = linear(normed, tokens, b.qkv, threads);
        if (c.clip_qkv) {
            const double clip = *c.clip_qkv;
            for (double& value : qkv) {
                value = std::clamp(value, -clip, clip);
            }
        }
        // Q, K and V of every head, dense [tokens, n_head, head_dim], out of the fused output:
        // BLOOM stores [n_head, 3, head_dim] per token, MPT [q | k | v].
        std::vector<double> q(tokens * h), k(tokens * h), v(tokens * h);
        for (std::size_t t = 0; t < tokens; ++t) {
            for (std::size_t head = 0; head < c.n_head; ++head) {
                for (std::size_t which = 0; which < 3; ++which) {
                    const double* from =
                        qkv.data() + t * 3 * h + (bloom ? (head * 3 + which) * d : which * h + head * d);
                    double* to = (which == 0 ? q : which == 1 ? k : v).data() + t * h + head * d;
                    std::copy(from, from + d, to);
                }
            }
        }
        // Causal ALiBi, slope * (j - i): BLOOM's slope * j up to a per-row constant. BLOOM's
        // build_alibi_tensor and MPT's gen_slopes give the paper's slopes in the same order
        // (mpt_alibi_slopes in host/spec/alibi.cpp), BLOOM with maximum bias 8.
        const AttentionParams params{.shape = {.batch = 1,
                                               .q_len = tokens,
                                               .kv_len = tokens,
                                               .n_head = c.n_head,
                                               .n_kv_head = c.n_head,
                                               .head_dim = c.head_dim},
                                     .mask = MaskMode::Causal,
                                     .alibi = AlibiMode::Causal,
                                     .max_bias = bloom ? 8.0f : static_cast<float>(c.alibi_bias_max)};
        const std::vector<double> context = attention(params, q, k, v, scale, threads);
        std::vector<double> attn = linear(context, tokens, b.out, threads);
        add_in_place(attn, x);
        x = std::move(attn);

        const std::vector<double> normed_2 = layer_norm(x, tokens, c.hidden, b.norm_2, c.layer_norm_epsilon);
        std::vector<double> up = linear(normed_2, tokens, b.up, threads);
        for (double& value : up) {
            // BLOOM's bloom_gelu_forward writes sqrt(2 / pi) as 0.79788456 (1e-10 relative off).
            value = bloom ? gelu_tanh(value) : gelu_erf(value);
        }
        std::vector<double> down = linear(up, tokens, b.down, threads);
        add_in_place(down, x);
        x = std::move(down);
        if (options_.progress) {
            options_.progress(layer, c.n_layer);
        }
    }

    const std::vector<double> final_x = layer_norm(x, tokens, c.hidden, w.final_norm, c.layer_norm_epsilon);
    const std::span<const float> head =
        c.tie_word_embeddings ? std::span<const float>(w.embedding) : std::span<const float>(w.lm_head.weight);
    return reference::linear(final_x, head, {}, tokens, c.vocab_size, c.hidden, threads);
}

}  // namespace vkf::reference
