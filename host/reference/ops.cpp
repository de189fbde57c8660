#include "host/reference/ops.hpp"

#include "base/error.hpp"
#include "host/reference/parallel.hpp"
#include "host/util/math.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>
#include <numbers>

namespace vkf::reference {

namespace {

void check_size(std::size_t got, std::uint64_t want, const char* op, const char* name) {
    if (got != want) {
        throw Error(std::string(op) + ": " + name + " holds " + fmt::to_string(got) + " elements; the shape needs " +
                    fmt::to_string(want));
    }
}

}  // namespace

double gelu_tanh(double x) {
    const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1.0 + std::tanh(u));
}

double gelu_erf(double x) {
    return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
}

double silu(double x) {
    return x / (1.0 + std::exp(-x));
}

double activation(Activation activation, double x) {
    switch (activation) {
        case Activation::GeluTanh:
            return gelu_tanh(x);
        case Activation::GeluErf:
            return gelu_erf(x);
        case Activation::Silu:
            return silu(x);
        default:
            return x;
    }
}

std::vector<double> linear(std::span<const double> x, std::span<const float> weight, std::span<const float> bias,
                           std::uint32_t m, std::uint32_t n, std::uint32_t k, unsigned threads) {
    check_size(x.size(), std::uint64_t{m} * k, "reference::linear", "x");
    check_size(weight.size(), std::uint64_t{n} * k, "reference::linear", "w");
    if (!bias.empty())
        check_size(bias.size(), n, "reference::linear", "bias");
    // Threads split the weight rows; each walks 4 weight rows (transposed into a double
    // tile) against 4 activation rows at a time.
    std::vector<double> y(std::size_t{m} * n);
    constexpr std::size_t kRows = 4;  // weight rows per tile
    constexpr std::size_t kCols = 4;  // activation rows per tile
    const std::size_t tiles = ceil_div(n, kRows);
    parallel_ranges(tiles, threads, 16, [&](std::size_t tile_begin, std::size_t tile_end) {
        std::vector<double> wt(std::size_t{k} * kRows);  // wt[l * kRows + r] = w[j0 + r, l]
        for (std::size_t tile = tile_begin; tile < tile_end; ++tile) {
            const std::size_t j0 = tile * kRows;
            const std::size_t rows = std::min<std::size_t>(kRows, n - j0);
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

std::vector<double> matmul(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                           std::span<const float> residual, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                           Activation activation) {
    check_size(x.size(), std::uint64_t{m} * k, "reference::matmul", "x");
    if (!residual.empty())
        check_size(residual.size(), std::uint64_t{m} * n, "reference::matmul", "residual");
    std::vector<double> y = linear(std::vector<double>(x.begin(), x.end()), w, bias, m, n, k);
    for (std::size_t i = 0; i < y.size(); ++i) {
        y[i] = reference::activation(activation, y[i]);
        if (!residual.empty())
            y[i] += residual[i];
    }
    return y;
}

std::vector<double> layernorm(std::span<const double> x, std::span<const float> weight, std::span<const float> bias,
                              std::uint32_t rows, std::uint32_t dim, double eps) {
    check_size(x.size(), std::uint64_t{rows} * dim, "reference::layernorm", "x");
    check_size(weight.size(), dim, "reference::layernorm", "weight");
    if (!bias.empty())
        check_size(bias.size(), dim, "reference::layernorm", "bias");
    std::vector<double> y(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
        const double* row = x.data() + r * dim;
        double mean = 0.0;
        for (std::uint32_t i = 0; i < dim; ++i)
            mean += row[i];
        mean /= dim;
        double var = 0.0;
        for (std::uint32_t i = 0; i < dim; ++i)
            var += (row[i] - mean) * (row[i] - mean);
        var /= dim;
        const double inv_std = 1.0 / std::sqrt(var + eps);
        for (std::uint32_t i = 0; i < dim; ++i) {
            y[r * dim + i] = (row[i] - mean) * inv_std * weight[i] + (bias.empty() ? 0.0 : double{bias[i]});
        }
    }
    return y;
}

std::vector<double> layernorm(std::span<const float> x, std::span<const float> weight, std::span<const float> bias,
                              std::uint32_t rows, std::uint32_t dim, double eps) {
    return layernorm(std::vector<double>(x.begin(), x.end()), weight, bias, rows, dim, eps);
}

std::vector<double> embedding(std::span<const std::uint32_t> ids, std::span<const float> table, std::uint32_t vocab,
                              std::uint32_t hidden) {
    check_size(table.size(), std::uint64_t{vocab} * hidden, "reference::embedding", "table");
    std::vector<double> out(ids.size() * std::uint64_t{hidden}, 0.0);
    for (std::size_t t = 0; t < ids.size(); ++t) {
        if (ids[t] >= vocab)
            continue;
        for (std::uint32_t h = 0; h < hidden; ++h) {
            out[t * hidden + h] = table[std::uint64_t{ids[t]} * hidden + h];
        }
    }
    return out;
}

std::vector<double> kv_append(std::span<const float> cache, std::span<const float> src, const HeadLayout& s,
                              const KvAppendShape& a) {
    check_size(cache.size(), std::uint64_t{a.batch} * a.max_len * a.n_kv_head * a.head_dim, "reference::kv_append",
               "cache");
    std::vector<double> out(cache.begin(), cache.end());
    for (std::uint64_t b = 0; b < a.batch; ++b) {
        for (std::uint64_t t = 0; t < a.new_len; ++t) {
            for (std::uint64_t h = 0; h < a.n_kv_head; ++h) {
                for (std::uint64_t d = 0; d < a.head_dim; ++d) {
                    const std::uint64_t from =
                        s.offset + b * s.batch_stride + t * s.token_stride + h * s.head_stride + d;
                    if (from >= src.size()) {
                        throw Error("reference::kv_append: the source layout reads past the source");
                    }
                    out[((b * a.max_len + a.pos + t) * a.n_kv_head + h) * a.head_dim + d] = src[from];
                }
            }
        }
    }
    return out;
}

std::vector<double> gated_activation(std::span<const double> gate, std::span<const double> up, std::uint32_t rows,
                                     std::uint32_t cols, std::uint32_t gate_stride, std::uint32_t up_stride,
                                     Activation act) {
    const auto view = [&](std::uint32_t stride) { return rows == 0 ? 0 : std::uint64_t{rows - 1} * stride + cols; };
    if (gate.size() < view(gate_stride) || up.size() < view(up_stride) || gate_stride < cols || up_stride < cols) {
        throw Error("reference::gated_activation: gate or up is smaller than its strided view");
    }
    std::vector<double> y(std::size_t{rows} * cols);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) {
            y[r * cols + c] = activation(act, gate[r * gate_stride + c]) * up[r * up_stride + c];
        }
    }
    return y;
}

std::vector<double> rmsnorm(std::span<const double> x, std::span<const float> weight, std::uint32_t rows,
                            std::uint32_t dim, double eps) {
    check_size(x.size(), std::uint64_t{rows} * dim, "reference::rmsnorm", "x");
    check_size(weight.size(), dim, "reference::rmsnorm", "weight");
    std::vector<double> y(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
        const double* row = x.data() + r * dim;
        double sq = 0.0;
        for (std::size_t i = 0; i < dim; ++i) {
            sq += row[i] * row[i];
        }
        const double inv = 1.0 / std::sqrt(sq / dim + eps);
        for (std::size_t i = 0; i < dim; ++i) {
            y[r * dim + i] = row[i] * inv * weight[i];
        }
    }
    return y;
}

}  // namespace vkf::reference
