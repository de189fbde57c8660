#pragma once
// Double-precision CPU references of the ops in host/ops.hpp, for tests and --check.
// Inputs are the values the GPU reads: round weights to fp16 first (halves_to_floats(
// floats_to_halves(w))) to compare against an fp16-weight run at fp32 tolerances.

#include "host/ops.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

double reference_gelu_tanh(double x);
double reference_gelu_erf(double x);
double reference_activation(Activation activation, double x); // None: x

// act(x . w^T + bias) + residual; bias and residual may be empty. Returns [m, n].
std::vector<double> reference_matmul(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                                     std::span<const float> residual, std::uint32_t m, std::uint32_t n,
                                     std::uint32_t k, Activation activation = Activation::None);

// Two-pass mean and variance over each row of [rows, dim]; bias may be empty.
std::vector<double> reference_layernorm(std::span<const float> x, std::span<const float> weight,
                                        std::span<const float> bias, std::uint32_t rows, std::uint32_t dim,
                                        double eps);

// out[t] = table[ids[t]], zeros for ids >= vocab. Returns [tokens, hidden].
std::vector<double> reference_embedding(std::span<const std::uint32_t> ids, std::span<const float> table,
                                        std::uint32_t vocab, std::uint32_t hidden);

// `cache` ([batch, max_len, n_kv_head, head_dim]) with rows pos..pos+new_len-1 of every
// batch replaced by the source read through args.src_layout (the other fields of args
// give the shape; its buffers are ignored).
std::vector<double> reference_kv_append(std::span<const float> cache, std::span<const float> src,
                                        const KvAppendArgs& args);

} // namespace vkf
