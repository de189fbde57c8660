#pragma once
// CPU reference for attention in double precision, the ground truth GPU results are
// compared against: a plain two-pass softmax per query row. Its only concession to speed
// is data layout (K and V are copied per head into blocked and transposed double arrays so
// that every inner loop is contiguous and allocation-free), which keeps test shapes of a
// few thousand positions to seconds; tests/test_attention_reference.cpp checks it against
// a deliberately naive implementation.

#include <span>
#include <vector>

#include "host/spec/attention_params.hpp"

namespace vkf::reference {

// softmax(scale * q.k + alibi bias, masked) . v for every (batch, query row, head), laid
// out like Q. Conventions (positions, masking, GQA, zero rows) as in attention_params.hpp.
// Throws vkf::Error when params are invalid or when q, k or v does not hold the number of
// elements the shape implies.
std::vector<double> attention(const AttentionParams& params, std::span<const float> q,
                                        std::span<const float> k, std::span<const float> v);

}  // namespace vkf::reference
