#include "host/reference/model.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "host/spec/alibi.hpp"
#include "host/spec/model_tensors.hpp"
#include "host/reference/ops.hpp"
#include "host/util/half.hpp"
#include "host/io/safetensors.hpp"
#include "runtime/error.hpp"

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

// Runs fn(begin, end) over [0, count) split into at most `threads` contiguous ranges, one
// std::thread each (the calling thread takes the first). Exceptions are rethrown here.
template <class Fn>
void parallel_ranges(std::size_t count, unsigned threads, std::size_t min_per_thread, const Fn& fn) {
    if (count == 0) {
        return;
    }
    std::size_t parts =
        std::max<std::size_t>(1, std::min<std::size_t>(threads, count / std::max<std::size_t>(1, min_per_thread)));
    if (parts <= 1) {
        fn(std::size_t{0}, count);
        return;
    }
    std::exception_ptr failure;
    std::mutex failure_mutex;
    const auto guarded = [&](std::size_t begin, std::size_t end) {
        try {
            fn(begin, end);
        } catch (...) {
            const std::lock_guard lock(failure_mutex);
            if (!failure) {
                failure = std::current_exception();
            }
        }
    };
    std::vector<std::thread> workers;
    workers.reserve(parts - 1);
    const auto bound = [&](std::size_t part) { return count * part / parts; };
    for (std::size_t part = 1; part < parts; ++part) {
        workers.emplace_back(guarded, bound(part), bound(part + 1));
    }
    guarded(0, bound(1));
    for (std::thread& worker : workers) {
        worker.join();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
}

// y[m, n] = x[m, k] . w[n, k]^T + bias. Every output is one sequential sum over k (in
// double, weights converted exactly), so tiling and threading never change a result.
// Threads split the weight rows; each walks 4 weight rows (transposed into a double
// tile) against 4 activation rows at a time.
std::vector<double> matmul(std::span<const double> x, std::uint32_t m, std::span<const float> weight,
                           std::span<const float> bias, std::size_t n, std::size_t k, unsigned threads) {
    std::vector<double> y(m * n);
    constexpr std::size_t kRows = 4;  // weight rows per tile
    constexpr std::size_t kCols = 4;  // activation rows per tile
    const std::size_t tiles = (n + kRows - 1) / kRows;
    parallel_ranges(tiles, threads, 16, [&](std::size_t tile_begin, std::size_t tile_end) {
        std::vector<double> wt(k * kRows);  // wt[l * kRows + r] = w[j0 + r, l]
        for (std::size_t tile = tile_begin; tile < tile_end; ++tile) {
            const std::size_t j0 = tile * kRows;
            const std::size_t rows = std::min(kRows, n - j0);
            for (std::size_t r = 0; r < kRows; ++r) {
                const float* w = weight.data() + (j0 + std::min(r, rows - 1)) * k;
                for (std::size_t l = 0; l < k; ++l) {
                    wt[l * kRows + r] = r < rows ? static_cast<double>(w[l]) : 0.0;
                }
            }
            std::size_t i = 0;
            for (; i + kCols <= m; i += kCols) {
                double acc[kCols][kRows] = {};
                const double* x0 = x.data() + i * k;
                for (std::size_t l = 0; l < k; ++l) {
                    const double* wl = wt.data() + l * kRows;
                    for (std::size_t c = 0; c < kCols; ++c) {
                        const double xv = x0[c * k + l];
                        for (std::size_t r = 0; r < kRows; ++r) {
                            acc[c][r] += xv * wl[r];
                        }
                    }
                }
                for (std::size_t c = 0; c < kCols; ++c) {
                    for (std::size_t r = 0; r < rows; ++r) {
                        y[(i + c) * n + j0 + r] = acc[c][r];
                    }
                }
            }
            for (; i < m; ++i) {
                double acc[kRows] = {};
                const double* xi = x.data() + i * k;
                for (std::size_t l = 0; l < k; ++l) {
                    for (std::size_t r = 0; r < kRows; ++r) {
                        acc[r] += xi[l] * wt[l * kRows + r];
                    }
                }
                for (std::size_t r = 0; r < rows; ++r) {
                    y[i * n + j0 + r] = acc[r];
                }
            }
        }
    });
    if (!bias.empty()) {
        for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                y[i * n + j] += static_cast<double>(bias[j]);
            }
        }
    }
    return y;
}

std::vector<double> linear(std::span<const double> x, std::uint32_t m, const RefLinear& layer, unsigned threads) {
    return matmul(x, m, layer.weight, layer.bias, layer.out, layer.in, threads);
}

// Two-pass mean and (biased) variance per row, as torch.nn.LayerNorm.
std::vector<double> layer_norm(std::span<const double> x, std::uint32_t rows, std::uint32_t dim, const RefNorm& norm,
                               double eps) {
    std::vector<double> y(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
        const double* in = x.data() + r * dim;
        double* out = y.data() + r * dim;
        double mean = 0.0;
        for (std::size_t i = 0; i < dim; ++i) {
            mean += in[i];
        }
        mean /= dim;
        double var = 0.0;
        for (std::size_t i = 0; i < dim; ++i) {
            var += (in[i] - mean) * (in[i] - mean);
        }
        var /= dim;
        const double inv = 1.0 / std::sqrt(var + eps);
        for (std::size_t i = 0; i < dim; ++i) {
            out[i] = (in[i] - mean) * inv * static_cast<double>(norm.weight[i]);
            if (!norm.bias.empty()) {
                out[i] += static_cast<double>(norm.bias[i]);
            }
        }
    }
    return y;
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
    RefLinear lm_head;           // empty when tied to the embedding
    std::vector<double> slopes;  // ALiBi slope per head
};

namespace {

class WeightReader {
public:
    WeightReader(const ShardedCheckpoint& checkpoint, const ModelConfig& config, bool round_to_f16)
        : checkpoint_(checkpoint), round_to_f16_(round_to_f16) {
        for (ExpectedTensor& tensor : expected_tensors(config)) {
            std::size_t elements = 1;
            for (std::size_t d : tensor.shape) {
                elements *= d;
            }
            sizes_.emplace(tensor.name, elements);
        }
    }

    std::vector<float> read(const std::string& name) const {
        const auto expected = sizes_.find(name);
        if (expected == sizes_.end()) {
            throw Error("reference model: internal error: tensor '" + name + "' is not expected by the config");
        }
        std::vector<float> values = checkpoint_.read_as_f32(name);
        if (values.size() != expected->second) {
            throw Error("reference model: tensor '" + name + "' of checkpoint '" + checkpoint_.source().string() +
                        "' holds " + std::to_string(values.size()) + " elements; the config needs " +
                        std::to_string(expected->second));
        }
        if (round_to_f16_) {
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
    bool round_to_f16_;
    std::unordered_map<std::string, std::size_t> sizes_;
};

}  // namespace

Model::Model(const ModelConfig& config, const ShardedCheckpoint& checkpoint, ModelOptions options)
    : config_(config), options_(std::move(options)) {
    validate(config_);
    check_checkpoint(checkpoint, config_);
    if (options_.threads == 0) {
        options_.threads = std::max(1u, std::thread::hardware_concurrency());
    }

    const WeightReader reader(checkpoint, config_, options_.round_weights_to_f16);
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

    // BLOOM's build_alibi_tensor and MPT's gen_slopes give the same slopes in the same order
    // (see mpt_alibi_slopes in host/alibi.cpp); computed here in double.
    const double max_bias = bloom ? 8.0 : config_.alibi_bias_max;
    for (std::uint32_t head = 0; head < config_.n_head; ++head) {
        weights->slopes.push_back(alibi_slope(head, config_.n_head, max_bias));
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
            for (double& v : qkv) {
                v = std::clamp(v, -clip, clip);
            }
        }
        // Offsets of head `head`'s q, k and v within a token's 3 * hidden outputs.
        const auto offset = [&](std::size_t head, std::size_t which) {
            return bloom ? (head * 3 + which) * d : which * h + head * d;
        };
        std::vector<double> context(tokens * h);
        parallel_ranges(c.n_head, threads, 1, [&](std::size_t head_begin, std::size_t head_end) {
            std::vector<double> scores(tokens);
            for (std::size_t head = head_begin; head < head_end; ++head) {
                const double slope = w.slopes[head];
                const std::size_t q_off = offset(head, 0);
                const std::size_t k_off = offset(head, 1);
                const std::size_t v_off = offset(head, 2);
                for (std::size_t i = 0; i < tokens; ++i) {
                    const double* q = qkv.data() + i * 3 * h + q_off;
                    double max_score = -INFINITY;
                    for (std::size_t j = 0; j <= i; ++j) {
                        const double* k = qkv.data() + j * 3 * h + k_off;
                        double dot = 0.0;
                        for (std::size_t e = 0; e < d; ++e) {
                            dot += q[e] * k[e];
                        }
                        // slope * (j - i): BLOOM's slope * j up to a per-row constant.
                        scores[j] = dot * scale + slope * (static_cast<double>(j) - static_cast<double>(i));
                        max_score = std::max(max_score, scores[j]);
                    }
                    double sum = 0.0;
                    for (std::size_t j = 0; j <= i; ++j) {
                        scores[j] = std::exp(scores[j] - max_score);
                        sum += scores[j];
                    }
                    double* out = context.data() + i * h + head * d;
                    for (std::size_t j = 0; j <= i; ++j) {
                        const double p = scores[j] / sum;
                        const double* v = qkv.data() + j * 3 * h + v_off;
                        for (std::size_t e = 0; e < d; ++e) {
                            out[e] += p * v[e];
                        }
                    }
                }
            }
        });
        std::vector<double> attn = linear(context, tokens, b.out, threads);
        add_in_place(attn, x);
        x = std::move(attn);

        const std::vector<double> normed_2 = layer_norm(x, tokens, c.hidden, b.norm_2, c.layer_norm_epsilon);
        std::vector<double> up = linear(normed_2, tokens, b.up, threads);
        for (double& v : up) {
            // BLOOM's bloom_gelu_forward writes sqrt(2 / pi) as 0.79788456 (1e-10 relative off).
            v = bloom ? gelu_tanh(v) : gelu_erf(v);
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
    return matmul(final_x, tokens, head, {}, c.vocab_size, c.hidden, threads);
}

}  // namespace vkf::reference
