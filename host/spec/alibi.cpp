#include "host/spec/alibi.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <string>

#include "base/error.hpp"

namespace vkf {

std::uint32_t alibi_pow2_floor(std::uint32_t n_head) {
    if (n_head == 0) {
        throw Error("ALiBi: n_head must be at least 1, got 0");
    }
    return std::bit_floor(n_head);
}

double alibi_slope(std::uint32_t head, std::uint32_t n_head, double max_bias) {
    const std::uint32_t c = alibi_pow2_floor(n_head);
    if (head >= n_head) {
        throw Error("ALiBi: head " + fmt::to_string(head) + " out of range for n_head " + fmt::to_string(n_head));
    }
    // m0^(head+1) written as one exp2 so that the result is rounded once: slopes that
    // are powers of two (b = 8, power-of-two c) come out exact.
    const double c_heads = static_cast<double>(c);
    if (head < c) {
        return std::exp2(-max_bias * static_cast<double>(head + 1) / c_heads);
    }
    const double odd_power = static_cast<double>(2 * (head - c) + 1);
    return std::exp2(-max_bias * odd_power / (2.0 * c_heads));
}

std::vector<float> alibi_slopes(std::uint32_t n_head, double max_bias) {
    alibi_pow2_floor(n_head);  // rejects n_head == 0 before anything is allocated
    std::vector<float> slopes(n_head);
    for (std::uint32_t h = 0; h < n_head; ++h) {
        slopes[h] = static_cast<float>(alibi_slope(h, n_head, max_bias));
    }
    return slopes;
}

// MPT's gen_slopes: N = next power of two >= n_head, s_k = 2^(-k * b / N) for k = 1..N,
// and for N != n_head the odd-indexed entries s[1::2] followed by the even-indexed s[::2],
// cut to n_head. It looks unlike the paper's construction, but s[1::2] are exactly the
// slopes for c = N/2 heads and s[::2] the odd powers of m1, so the two orders agree for
// every n_head and b (test_alibi checks this). It is kept as a separate function because
// it states what MPT checkpoints were trained with, independent of that coincidence.
std::vector<float> mpt_alibi_slopes(std::uint32_t n_head, double alibi_bias_max) {
    if (n_head == 0) {
        throw Error("MPT ALiBi: n_head must be at least 1, got 0");
    }
    if (n_head > (1u << 31)) {
        throw Error("MPT ALiBi: n_head " + fmt::to_string(n_head) + " is too large");
    }
    const std::uint32_t n_padded = std::bit_ceil(n_head);
    std::vector<double> padded(n_padded);
    for (std::uint32_t k = 1; k <= n_padded; ++k) {
        padded[k - 1] = std::exp2(-(static_cast<double>(k) * alibi_bias_max / static_cast<double>(n_padded)));
    }

    std::vector<float> slopes;
    slopes.reserve(n_head);
    if (n_padded == n_head) {
        for (double s : padded) {
            slopes.push_back(static_cast<float>(s));
        }
        return slopes;
    }
    for (std::uint32_t first : {1u, 0u}) {
        for (std::uint32_t k = first; k < n_padded && slopes.size() < n_head; k += 2) {
            slopes.push_back(static_cast<float>(padded[k]));
        }
    }
    return slopes;
}

}  // namespace vkf
