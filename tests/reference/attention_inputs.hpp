#pragma once
// What the attention reference suites (test_attention_reference.cpp,
// test_attention_params.cpp) share: seeded random Q, K and V for a shape, and the
// reference's output for them.

#include <cstdint>
#include <vector>

#include "host/reference/attention.hpp"
#include "host/spec/attention_params.hpp"
#include "host/util/random.hpp"

namespace vkf::test {

struct Inputs {
    std::vector<float> q, k, v;
};

inline Inputs random_inputs(const AttentionShape& shape, std::uint64_t seed) {
    return Inputs{
        .q = vkf::random_uniform(vkf::q_element_count(shape), seed),
        .k = vkf::random_uniform(vkf::kv_element_count(shape), seed + 1),
        .v = vkf::random_uniform(vkf::kv_element_count(shape), seed + 2),
    };
}

inline std::vector<double> reference(const AttentionParams& params, const Inputs& in) {
    return vkf::reference::attention(params, in.q, in.k, in.v);
}

}  // namespace vkf::test
