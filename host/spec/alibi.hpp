#pragma once
// ALiBi position biases (Press et al., "Train Short, Test Long", ICLR 2022) and the
// attention mask modes, as described in docs/DESIGN.md. The GPU op receives these enums
// unchanged in its push constants, hence the fixed underlying type and values.

#include "host/util/half.hpp"

#include <cstdint>
#include <vector>

namespace vkf {

enum class AlibiMode : std::uint32_t {
    Off = 0,
    Causal = 1,     // slope * (j - i): decoders, used together with a causal mask
    Symmetric = 2,  // -slope * |i - j|: encoders
    // Falcon: bf16(slope * j), added to q.k before the softmax scale (so it is scaled with
    // it); slope * j rounded to bfloat16 as Hugging Face's build_alibi_tensor computes it.
    // Decoders (with a causal mask); the slopes are the bf16-rounded ones.
    FalconBf16 = 3,
};

enum class MaskMode : std::uint32_t {
    None = 0,
    Causal = 1,  // key j is hidden from query position i when j > i
};

// Largest power of two <= n_head; throws vkf::Error when n_head is 0.
std::uint32_t alibi_pow2_floor(std::uint32_t n_head);

// Slope of `head` (0-based) among n_head heads, the paper's order generalized to a
// maximum bias b: with c = alibi_pow2_floor(n_head), m0 = 2^(-b/c), m1 = 2^(-b/(2c)),
// slope = m0^(head+1) for head < c, else m1^(2(head-c)+1).
// Throws vkf::Error when n_head is 0 or head >= n_head.
double alibi_slope(std::uint32_t head, std::uint32_t n_head, double max_bias);

// alibi_slope for every head, rounded to float as the GPU receives them.
std::vector<float> alibi_slopes(std::uint32_t n_head, double max_bias = 8.0);

// Slopes in the order MPT's gen_slopes produces (llm-foundry), for loading MPT models.
std::vector<float> mpt_alibi_slopes(std::uint32_t n_head, double alibi_bias_max = 8.0);

// Bias added to the scaled score of query position i and key position j (absolute
// positions); FalconBf16's is added before the scale (the caller scales it). Inline because the CPU reference calls it
// for every score.
inline double alibi_bias(AlibiMode mode, double slope, std::int64_t i, std::int64_t j) {
    switch (mode) {
        case AlibiMode::Causal:
            return slope * static_cast<double>(j - i);
        case AlibiMode::Symmetric:
            return -slope * static_cast<double>(i > j ? i - j : j - i);
        case AlibiMode::FalconBf16:
            return bfloat16_to_float(float_to_bfloat16(static_cast<float>(slope * static_cast<double>(j))));
        case AlibiMode::Off:
            break;
    }
    return 0.0;
}

}  // namespace vkf
