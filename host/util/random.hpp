#pragma once
// Seeded random test data. Seeds make failures reproducible; docs/DESIGN.md forbids testing
// on zeros or constant data, which would hide indexing mistakes.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace vkf {

// n values uniform in [lo, hi). The same seed gives the same values on every run with the
// same standard library (distributions are not specified bit-exactly across libraries).
inline std::vector<float> random_uniform(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<float> distribution(lo, hi);
    std::vector<float> values(n);
    for (float& value : values) {
        value = distribution(engine);
    }
    return values;
}

}  // namespace vkf
