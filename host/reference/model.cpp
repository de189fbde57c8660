#include "host/reference/model.hpp"

#include "base/error.hpp"
#include "host/io/safetensors.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/reference/attention.hpp"
#include "host/reference/ops.hpp"
#include "host/spec/model_tensors.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>

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
    RefNorm norm_1;  // BLOOM input_layernorm, MPT norm_1, ...
    RefLinear qkv;
    RefNorm q_norm, k_norm;  // MPT qk_ln
    RefLinear out;           // BLOOM self_attention.dense
    RefNorm norm_2;          // BLOOM post_attention_layernorm
    RefLinear gate;          // gated MLPs: the activated half
    RefLinear up;            // BLOOM mlp.dense_h_to_4h; gated: the multiplied half
    RefLinear down;          // BLOOM mlp.dense_4h_to_h
};

std::vector<double> linear(std::span<const double> x, std::uint32_t m, const RefLinear& layer, unsigned threads) {
    return reference::linear(x, layer.weight, layer.bias, m, layer.out, layer.in, threads);
}

// LayerNorm, or Baichuan's RMSNorm.
std::vector<double> layer_norm(std::span<const double> x, std::uint32_t rows, std::uint32_t dim, const RefNorm& norm,
                               double eps, NormKind kind) {
    if (kind == NormKind::RmsNorm) {
        return rmsnorm(x, norm.weight, rows, dim, eps);
    }
    return layernorm(x, norm.weight, norm.bias, rows, dim, eps);
}

void add_in_place(std::vector<double>& y, std::span<const double> residual) {
    for (std::size_t i = 0; i < y.size(); ++i) {
        y[i] += residual[i];
    }
}

}  // namespace

struct Model::Weights {
    std::vector<float> embedding;           // [vocab, hidden]
    std::vector<float> position_embedding;  // MPT wpe [max_seq_len, hidden], or empty
    RefNorm embedding_norm;                 // BLOOM only
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
                        "' holds " + fmt::to_string(values.size()) + " elements; the config needs " +
                        fmt::to_string(elements));
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

private:
    const ShardedCheckpoint& checkpoint_;
    QuantFormat format_;  // of the checkpoint
    bool round_to_f16_;
    QuantFormat quantize_;
    std::unordered_map<std::string, ExpectedTensor> expected_;
};

}  // namespace

Model::Model(const ModelConfig& config, const ShardedCheckpoint& checkpoint, ModelOptions options)
    : config_(resolve_with_checkpoint(config, checkpoint)), options_(std::move(options)) {
    validate(config_);
    if (options_.threads == 0) {
        options_.threads = std::max(1u, std::thread::hardware_concurrency());
    }

    const WeightReader reader(checkpoint, config_, options_);
    auto weights = std::make_unique<Weights>();
    weights->blocks.resize(config_.n_layer);
    for (const ExpectedTensor& t : expected_tensors(config_)) {
        std::vector<float> values = reader.read(t.name);
        RefBlock& block = weights->blocks.at(t.layer);
        const auto norm = [&](RefNorm& n) { (t.bias ? n.bias : n.weight) = std::move(values); };
        const auto linear = [&](RefLinear& l) {
            if (t.bias) {
                l.bias = std::move(values);
                return;
            }
            l.weight = std::move(values);
            l.out = static_cast<std::uint32_t>(t.shape.at(0));
            l.in = static_cast<std::uint32_t>(t.shape.at(1));
        };
        switch (t.slot) {
            case TensorSlot::Embedding:
                weights->embedding = std::move(values);
                break;
            case TensorSlot::PositionEmbedding:
                weights->position_embedding = std::move(values);
                break;
            case TensorSlot::EmbeddingNorm:
                norm(weights->embedding_norm);
                break;
            case TensorSlot::AttnNorm:
                norm(block.norm_1);
                break;
            case TensorSlot::Qkv:
                linear(block.qkv);
                break;
            case TensorSlot::QNorm:
                norm(block.q_norm);
                break;
            case TensorSlot::KNorm:
                norm(block.k_norm);
                break;
            case TensorSlot::AttnOut:
                linear(block.out);
                break;
            case TensorSlot::MlpNorm:
                norm(block.norm_2);
                break;
            case TensorSlot::Gate:
                linear(block.gate);
                break;
            case TensorSlot::Up:
                linear(block.up);
                break;
            case TensorSlot::Down:
                linear(block.down);
                break;
            case TensorSlot::FinalNorm:
                norm(weights->final_norm);
                break;
            case TensorSlot::LmHead:
                linear(weights->lm_head);
                break;
        }
    }

    weights_ = std::move(weights);
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

std::vector<double> Model::forward(std::span<const std::uint32_t> ids) const {
    const auto all = static_cast<std::uint32_t>(ids.size());
    return forward(ids, std::span(&all, 1));
}

std::vector<double> Model::forward(std::span<const std::uint32_t> ids,
                                   std::span<const std::uint32_t> chunk_ends) const {
    const ModelConfig& c = config_;
    const Weights& w = *weights_;
    const FamilyTraits traits = family_traits(c.family);
    const unsigned threads = options_.threads;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        if (ids[t] >= c.vocab_size) {
            throw Error("reference model: token id " + fmt::to_string(ids[t]) + " at position " + fmt::to_string(t) +
                        " is out of range for vocab_size " + fmt::to_string(c.vocab_size));
        }
    }
    const auto tokens = static_cast<std::uint32_t>(ids.size());
    if (tokens == 0) {
        return {};
    }
    for (std::size_t i = 0; i < chunk_ends.size(); ++i) {
        if (chunk_ends[i] == 0 || (i > 0 && chunk_ends[i] <= chunk_ends[i - 1]) || chunk_ends[i] > tokens ||
            (i + 1 == chunk_ends.size() && chunk_ends[i] != tokens)) {
            throw Error("reference model: chunk ends must increase to the token count " + fmt::to_string(tokens));
        }
    }
    if (c.learned_pos_emb && tokens > c.max_seq_len) {
        throw Error("reference model: " + fmt::to_string(tokens) + " tokens, but the learned positions cover " +
                    fmt::to_string(c.max_seq_len));
    }
    const std::size_t h = c.hidden;
    const std::size_t d = c.head_dim;
    const std::size_t kv = std::size_t{c.n_kv_head} * d;
    const std::size_t width = h + 2 * kv;
    const NormKind norm_kind = traits.norm;
    const double eps = c.layer_norm_epsilon;

    // Embedding: MPT adds wpe rows of positions 0.., Jais multiplies by its muP scale, BLOOM
    // normalizes.
    std::vector<double> x(tokens * h);
    for (std::size_t t = 0; t < tokens; ++t) {
        const float* row = w.embedding.data() + std::size_t{ids[t]} * h;
        for (std::size_t i = 0; i < h; ++i) {
            double value = static_cast<double>(row[i]);
            if (!w.position_embedding.empty()) {
                value += static_cast<double>(w.position_embedding[t * h + i]);
            }
            x[t * h + i] = value * c.embedding_scale;
        }
    }
    if (traits.embedding_norm) {
        x = layer_norm(x, tokens, c.hidden, w.embedding_norm, eps, norm_kind);
    }

    const double scale = attention_scale(c);
    // The paper's slopes in double where the family's code computes them from the formula
    // (MPT's gen_slopes gives them in the same order); Falcon's bf16-rounded slopes and Jais'
    // divided ones as the float table the modeling code builds.
    const bool formula_slopes = traits.alibi_form == AlibiForm::Standard && c.alibi_scaling_factor == 1.0 && c.alibi;
    const std::vector<float> slopes = formula_slopes ? std::vector<float>{} : model_alibi_slopes(c);
    for (std::uint32_t layer = 0; layer < c.n_layer; ++layer) {
        const RefBlock& b = w.blocks[layer];
        const std::vector<double> normed = layer_norm(x, tokens, c.hidden, b.norm_1, eps, norm_kind);
        std::vector<double> qkv = linear(normed, tokens, b.qkv, threads);
        if (c.clip_qkv) {
            const double clip = *c.clip_qkv;
            for (double& value : qkv) {
                value = std::clamp(value, -clip, clip);
            }
        }
        // Q [tokens, n_head, head_dim] and K, V [tokens, n_kv_head, head_dim] out of the fused
        // output: BLOOM and Falcon store [n_head, 3, head_dim] per token, the others [q | k | v].
        std::vector<double> q(tokens * h), k(tokens * kv), v(tokens * kv);
        for (std::size_t t = 0; t < tokens; ++t) {
            const double* row = qkv.data() + t * width;
            if (traits.interleaved_qkv) {
                for (std::size_t head = 0; head < c.n_head; ++head) {
                    std::copy_n(row + (head * 3 + 0) * d, d, q.data() + t * h + head * d);
                    std::copy_n(row + (head * 3 + 1) * d, d, k.data() + t * kv + head * d);
                    std::copy_n(row + (head * 3 + 2) * d, d, v.data() + t * kv + head * d);
                }
            } else {
                std::copy_n(row, h, q.data() + t * h);
                std::copy_n(row + h, kv, k.data() + t * kv);
                std::copy_n(row + h + kv, kv, v.data() + t * kv);
            }
        }
        if (c.qk_ln) {
            q = layer_norm(q, tokens, c.hidden, b.q_norm, eps, NormKind::LayerNorm);
            k = layer_norm(k, tokens, static_cast<std::uint32_t>(kv), b.k_norm, eps, NormKind::LayerNorm);
        }
        // Causal attention with the family's ALiBi: slope * (j - i) (BLOOM's, Baichuan's and
        // Jais' slope * j up to a per-row constant), Falcon's bf16(slope * j) added before the
        // scale, none for MPT without ALiBi; Jais' dynamic scaling through alibi_train_len.
        // Chunk by chunk: rows [first, end) against keys [0, end), as a KV-cached run; with
        // attention_window W each row sees only the W keys before it.
        std::vector<double> context(tokens * h);
        for (std::uint32_t chunk = 0, first = 0; chunk < chunk_ends.size(); first = chunk_ends[chunk++]) {
            const std::uint32_t end = chunk_ends[chunk];
            const AttentionParams params{.shape = {.batch = 1,
                                                   .q_len = end - first,
                                                   .kv_len = end,
                                                   .n_head = c.n_head,
                                                   .n_kv_head = c.n_kv_head,
                                                   .head_dim = c.head_dim},
                                         .mask = MaskMode::Causal,
                                         .alibi = !c.alibi                                     ? AlibiMode::Off
                                                  : traits.alibi_form == AlibiForm::FalconBf16 ? AlibiMode::FalconBf16
                                                                                               : AlibiMode::Causal,
                                         .max_bias = static_cast<float>(c.alibi_bias_max),
                                         .slopes = slopes,
                                         .alibi_train_len = c.alibi_train_seq_len.value_or(0),
                                         .window = c.attention_window};
            const std::vector<double> part =
                attention(params, std::span(q).subspan(first * h, (end - first) * h), std::span(k).first(end * kv),
                          std::span(v).first(end * kv), scale, threads);
            std::copy(part.begin(), part.end(), context.begin() + static_cast<std::ptrdiff_t>(first * h));
        }
        std::vector<double> attn = linear(context, tokens, b.out, threads);
        // BLOOM's apply_residual_connection_post_layernorm: the residual is the norm's output.
        add_in_place(attn, c.post_layernorm_residual ? std::span<const double>(normed) : std::span<const double>(x));
        x = std::move(attn);

        const std::vector<double> normed_2 = layer_norm(x, tokens, c.hidden, b.norm_2, eps, norm_kind);
        std::vector<double> hidden_mlp;
        if (traits.mlp == MlpKind::Gated) {
            // Baichuan: down(silu(gate_proj(x)) * up_proj(x)); Jais: c_proj(c_fc(x) * silu(c_fc2(x))).
            const std::vector<double> gate = linear(normed_2, tokens, b.gate, threads);
            const std::vector<double> up = linear(normed_2, tokens, b.up, threads);
            hidden_mlp =
                gated_activation(gate, up, tokens, c.ffn_hidden, c.ffn_hidden, c.ffn_hidden, traits.activation);
        } else {
            hidden_mlp = linear(normed_2, tokens, b.up, threads);
            for (double& value : hidden_mlp) {
                // BLOOM's bloom_gelu_forward writes sqrt(2 / pi) as 0.79788456 (1e-10 relative off).
                value = activation(traits.activation, value);
            }
        }
        std::vector<double> down = linear(hidden_mlp, tokens, b.down, threads);
        add_in_place(down, c.post_layernorm_residual ? std::span<const double>(normed_2) : std::span<const double>(x));
        x = std::move(down);
        if (options_.progress) {
            options_.progress(layer, c.n_layer);
        }
    }

    const std::vector<double> final_x = layer_norm(x, tokens, c.hidden, w.final_norm, eps, norm_kind);
    const std::span<const float> head =
        c.tie_word_embeddings ? std::span<const float>(w.embedding) : std::span<const float>(w.lm_head.weight);
    std::vector<double> logits = reference::linear(final_x, head, {}, tokens, c.vocab_size, c.hidden, threads);
    // Baichuan2's NormHead (each head row divided by its L2 norm), MPT's logit_scale, Jais'
    // mup_output_alpha * mup_width_scale.
    std::vector<double> column_scale(c.vocab_size, c.logit_scale.value_or(1.0));
    if (c.normalized_lm_head) {
        for (std::size_t v = 0; v < c.vocab_size; ++v) {
            double sumsq = 0.0;
            for (std::size_t i = 0; i < h; ++i) {
                const double value = head[v * h + i];
                sumsq += value * value;
            }
            column_scale[v] /= std::max(std::sqrt(sumsq), 1e-12);
        }
    }
    for (std::size_t t = 0; t < tokens; ++t) {
        for (std::size_t v = 0; v < c.vocab_size; ++v) {
            logits[t * c.vocab_size + v] *= column_scale[v];
        }
    }
    return logits;
}

}  // namespace vkf::reference
