#pragma once
// Double-precision CPU references of the GPU ops (host/ops/), for tests, --check and the
// reference model. The float forms take the values the GPU reads (round weights with
// rounded_to(DType::F16, w) to compare against an fp16-weight run at fp32 tolerances); the
// double forms are the same computations on double activations, which the reference model
// chains.

#include "host/spec/activation.hpp"
#include "host/spec/kv_layout.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf::reference {

double gelu_tanh(double x);
double gelu_erf(double x);
double silu(double x);                               // x sigmoid(x)
double activation(Activation activation, double x);  // None: x

// y[r, c] = act(gate[r * gate_stride + c]) * up[r * up_stride + c]: a gated linear unit
// (SwiGLU with Silu, GEGLU with GeluErf). Returns [rows, cols].
std::vector<double> gated_activation(std::span<const double> gate, std::span<const double> up, std::uint32_t rows,
                                     std::uint32_t cols, std::uint32_t gate_stride, std::uint32_t up_stride,
                                     Activation act);

// x / sqrt(mean(x^2) + eps) * weight over each row of [rows, dim] (T5/LLaMA RMSNorm, no
// mean subtraction, no bias).
std::vector<double> rmsnorm(std::span<const double> x, std::span<const float> weight, std::uint32_t rows,
                            std::uint32_t dim, double eps);

// x[m, k] . w[n, k]^T + bias[n] (bias may be empty). Every output is one sequential sum
// over k, so the result does not depend on `threads`.
std::vector<double> linear(std::span<const double> x, std::span<const float> w, std::span<const float> bias,
                           std::uint32_t m, std::uint32_t n, std::uint32_t k, unsigned threads = 1);

// act(x . w^T + bias) + residual; bias and residual may be empty. Returns [m, n].
std::vector<double> matmul(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                           std::span<const float> residual, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                           Activation activation = Activation::None);

// Two-pass mean and (biased) variance over each row of [rows, dim], as torch.nn.LayerNorm;
// bias may be empty.
std::vector<double> layernorm(std::span<const double> x, std::span<const float> weight, std::span<const float> bias,
                              std::uint32_t rows, std::uint32_t dim, double eps);
std::vector<double> layernorm(std::span<const float> x, std::span<const float> weight, std::span<const float> bias,
                              std::uint32_t rows, std::uint32_t dim, double eps);

// out[t] = table[ids[t]], zeros for ids >= vocab. Returns [tokens, hidden].
std::vector<double> embedding(std::span<const std::uint32_t> ids, std::span<const float> table, std::uint32_t vocab,
                              std::uint32_t hidden);

// `cache` ([batch, max_len, n_kv_head, head_dim] of `shape`) with rows pos..pos+new_len-1
// of every batch replaced by the source read through `src_layout`.
std::vector<double> kv_append(std::span<const float> cache, std::span<const float> src, const HeadLayout& src_layout,
                              const KvAppendShape& shape);

}  // namespace vkf::reference
