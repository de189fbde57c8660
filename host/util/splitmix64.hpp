#pragma once
// splitmix64 (Steele, Lea and Flood, 2014): a bijective 64-bit mix in which every input bit
// reaches every output bit, the same on every platform (unlike std's distributions). Seeds
// the random weights, drives the sampler's generator and hashes the prefix cache's chains.

#include <cstdint>

namespace vkf {

inline constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;

inline constexpr std::uint64_t splitmix64_mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// The generator's next output: the state steps by the golden gamma and is mixed.
inline std::uint64_t splitmix64_next(std::uint64_t& state) {
    return splitmix64_mix(state += kGoldenGamma);
}

}  // namespace vkf
