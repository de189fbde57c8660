#pragma once
// CPU reference for attention in double precision, the ground truth GPU results are
// compared against: a plain two-pass softmax per query row. Its only concession to speed
// is data layout (K and V are copied per head into blocked and transposed double arrays so
// that every inner loop is contiguous and allocation-free), which keeps test shapes of a
// few thousand positions to seconds; tests/reference/test_attention_reference.cpp checks it against
// a deliberately naive implementation. The reference model runs its attention through it.

#include <span>
#include <vector>

#include "host/spec/attention_params.hpp"

namespace vkf::reference {

// softmax(scale * q.k + alibi bias, masked) . v for every (batch, query row, head), laid
// out like Q. Conventions (positions, masking, GQA, zero rows) as in attention_params.hpp.
// Throws vkf::Error when params are invalid or when q, k or v does not hold the number of
// elements the shape implies.
std::vector<double> attention(const AttentionParams& params, std::span<const float> q, std::span<const float> k,
                              std::span<const float> v);

// The same on double inputs with a double `scale` (the float form passes
// effective_scale(params), what the GPU receives), on up to `threads` threads: one per
// KV head at most, so results do not depend on the thread count.
std::vector<double> attention(const AttentionParams& params, std::span<const double> q, std::span<const double> k,
                              std::span<const double> v, double scale, unsigned threads = 1);

}  // namespace vkf::reference
