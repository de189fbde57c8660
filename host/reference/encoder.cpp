#include "host/reference/encoder.hpp"

#include "base/error.hpp"
#include "host/io/safetensors.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/reference/attention.hpp"
#include "host/reference/ops.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <unordered_map>

namespace vkf::reference {

namespace {

struct RefLinear {
    std::vector<float> weight;  // [out, in]
    std::vector<float> bias;    // [out], or empty
    std::uint32_t out = 0, in = 0;
};

struct RefNorm {
    std::vector<float> weight, bias;
};

struct RefLayer {
    RefLinear query, key, value, attn_out;
    RefNorm attn_norm;
    RefLinear gated;  // [2 I, hidden]: the gated half first
    RefLinear wo;
    RefNorm mlp_norm;
};

}  // namespace

struct Encoder::Weights {
    std::vector<float> word_embeddings;  // [vocab, hidden]
    std::vector<float> token_type_0;     // [hidden]: row 0 of token_type_embeddings
    RefNorm embedding_norm;
    std::vector<RefLayer> layers;
};

namespace {

class WeightReader {
public:
    WeightReader(const ShardedCheckpoint& checkpoint, const EncoderConfig& config, const EncoderOptions& options)
        : checkpoint_(checkpoint), options_(options) {
        check_encoder_checkpoint(checkpoint, config);
        for (ExpectedTensor& tensor : expected_encoder_tensors(config)) {
            expected_.emplace(tensor.name, tensor);
        }
    }

    std::vector<float> read(const std::string& name) const {
        const auto it = expected_.find(name);
        if (it == expected_.end()) {
            throw Error("reference encoder: internal error: tensor '" + name + "' is not expected by the config");
        }
        const ExpectedTensor& e = it->second;
        std::vector<float> values = checkpoint_.read_as_f32(encoder_tensor_name(checkpoint_, name));
        if (quantized_role(e.role) && options_.quantize != QuantFormat::None) {
            const QuantizedMatrix q = quantize_matrix(options_.quantize, values, e.shape[0], e.shape[1], name);
            values = dequantize_matrix(options_.quantize, q.values, q.scales, e.shape[0], e.shape[1]);
        } else if (options_.round_weights_to_f16 || options_.quantize != QuantFormat::None) {
            for (float& v : values) {
                v = half_to_float(float_to_half(v));
            }
        }
        return values;
    }

    RefNorm norm(const std::string& prefix) const { return RefNorm{read(prefix + ".weight"), read(prefix + ".bias")}; }

    RefLinear linear(const std::string& prefix, std::uint32_t out, std::uint32_t in, bool bias) const {
        RefLinear l{.weight = read(prefix + ".weight"), .bias = {}, .out = out, .in = in};
        if (bias) {
            l.bias = read(prefix + ".bias");
        }
        return l;
    }

private:
    const ShardedCheckpoint& checkpoint_;
    EncoderOptions options_;
    std::unordered_map<std::string, ExpectedTensor> expected_;
};

std::vector<double> apply(std::span<const double> x, std::uint32_t rows, const RefLinear& l, unsigned threads) {
    return linear(x, l.weight, l.bias, rows, l.out, l.in, threads);
}

// LayerNorm(y + residual), the post-LN of every BERT sublayer.
std::vector<double> add_norm(std::vector<double> y, std::span<const double> residual, std::uint32_t rows,
                             std::uint32_t dim, const RefNorm& norm, double eps) {
    for (std::size_t i = 0; i < y.size(); ++i) {
        y[i] += residual[i];
    }
    return layernorm(std::span<const double>(y), norm.weight, norm.bias, rows, dim, eps);
}

}  // namespace

Encoder::Encoder(const EncoderConfig& config, const ShardedCheckpoint& checkpoint, EncoderOptions options)
    : config_(config), options_(options) {
    validate(config_);
    if (options_.threads == 0) {
        options_.threads = std::max(1u, std::thread::hardware_concurrency());
    }
    const WeightReader reader(checkpoint, config_, options_);
    auto w = std::make_unique<Weights>();
    const std::uint32_t h = config_.hidden, inter = config_.intermediate;
    w->word_embeddings = reader.read("embeddings.word_embeddings.weight");
    w->token_type_0 = reader.read("embeddings.token_type_embeddings.weight");
    w->token_type_0.resize(h);
    w->embedding_norm = reader.norm("embeddings.LayerNorm");
    for (std::uint32_t i = 0; i < config_.n_layer; ++i) {
        const std::string p = "encoder.layer." + fmt::to_string(i);
        RefLayer l;
        l.query = reader.linear(p + ".attention.self.query", h, h, true);
        l.key = reader.linear(p + ".attention.self.key", h, h, true);
        l.value = reader.linear(p + ".attention.self.value", h, h, true);
        l.attn_out = reader.linear(p + ".attention.output.dense", h, h, true);
        l.attn_norm = reader.norm(p + ".attention.output.LayerNorm");
        l.gated = reader.linear(p + ".mlp.gated_layers", 2 * inter, h, false);
        l.wo = reader.linear(p + ".mlp.wo", h, inter, true);
        l.mlp_norm = reader.norm(p + ".mlp.layernorm");
        w->layers.push_back(std::move(l));
    }
    weights_ = std::move(w);
}

Encoder::~Encoder() = default;
Encoder::Encoder(Encoder&&) noexcept = default;
Encoder& Encoder::operator=(Encoder&&) noexcept = default;

std::vector<double> Encoder::forward(std::span<const std::uint32_t> ids) const {
    const EncoderConfig& c = config_;
    const Weights& w = *weights_;
    if (ids.empty()) {
        throw Error("reference encoder: no token ids");
    }
    for (std::size_t t = 0; t < ids.size(); ++t) {
        if (ids[t] >= c.vocab_size) {
            throw Error("reference encoder: token id " + fmt::to_string(ids[t]) + " at position " + fmt::to_string(t) +
                        " is not below vocab_size " + fmt::to_string(c.vocab_size));
        }
    }
    const auto tokens = static_cast<std::uint32_t>(ids.size());
    const std::size_t h = c.hidden;
    const unsigned threads = options_.threads;

    std::vector<double> x(tokens * h);
    for (std::size_t t = 0; t < tokens; ++t) {
        const float* row = w.word_embeddings.data() + std::size_t{ids[t]} * h;
        for (std::size_t i = 0; i < h; ++i) {
            x[t * h + i] = static_cast<double>(row[i]) + static_cast<double>(w.token_type_0[i]);
        }
    }
    x = layernorm(std::span<const double>(x), w.embedding_norm.weight, w.embedding_norm.bias, tokens, c.hidden,
                  c.layer_norm_eps);

    const AttentionParams params{.shape = {.batch = 1,
                                           .q_len = tokens,
                                           .kv_len = tokens,
                                           .n_head = c.n_head,
                                           .n_kv_head = c.n_head,
                                           .head_dim = c.head_dim},
                                 .mask = MaskMode::None,
                                 .alibi = AlibiMode::Symmetric,
                                 .max_bias = 8.0f,
                                 .window = options_.window};
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    for (const RefLayer& l : w.layers) {
        // [tokens, hidden] is [tokens, n_head, head_dim]: transpose_for_scores only views it.
        const std::vector<double> q = apply(x, tokens, l.query, threads);
        const std::vector<double> k = apply(x, tokens, l.key, threads);
        const std::vector<double> v = apply(x, tokens, l.value, threads);
        const std::vector<double> context = attention(params, q, k, v, scale, threads);
        x = add_norm(apply(context, tokens, l.attn_out, threads), x, tokens, c.hidden, l.attn_norm, c.layer_norm_eps);

        const std::vector<double> g = apply(x, tokens, l.gated, threads);
        const std::uint32_t inter = c.intermediate;
        const std::span<const double> gated(g);
        const std::vector<double> act =
            gated_activation(gated, gated.subspan(inter), tokens, inter, 2 * inter, 2 * inter, Activation::GeluErf);
        x = add_norm(apply(act, tokens, l.wo, threads), x, tokens, c.hidden, l.mlp_norm, c.layer_norm_eps);
    }
    return x;
}

}  // namespace vkf::reference
