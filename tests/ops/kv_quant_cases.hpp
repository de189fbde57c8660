#pragma once
// What the attention suites with NaN-poisoned keys (paged, window) need of a quantized K/V
// cache: the blocks of a tensor whose unseen head rows are NaN.

#include "host/quant/kv_quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace vkf::test {

// Head rows of `x` quantized, those that are NaN (no key of a sequence, or unseen) as all-ones
// words (a NaN scale: any value read from one is NaN); `x` becomes the values the blocks
// stand for (NaN rows stay NaN).
inline std::vector<std::uint32_t> quantize_poisoned(std::vector<float>& x, QuantFormat quant, std::uint32_t head_dim) {
    std::vector<float> finite = x;
    std::vector<bool> dead(x.size() / head_dim);
    for (std::size_t r = 0; r < dead.size(); ++r) {
        dead[r] = std::isnan(x[r * head_dim]);
        if (dead[r]) {
            std::fill_n(finite.begin() + static_cast<std::ptrdiff_t>(r * head_dim), head_dim, 0.0f);
        }
    }
    std::vector<std::uint32_t> words = kv_quantize(quant, finite, head_dim);
    x = kv_dequantize(quant, words, head_dim);
    const std::size_t row_words = words.size() / dead.size();
    for (std::size_t r = 0; r < dead.size(); ++r) {
        if (dead[r]) {
            std::fill_n(words.begin() + static_cast<std::ptrdiff_t>(r * row_words), row_words, 0xFFFFFFFFu);
            std::fill_n(x.begin() + static_cast<std::ptrdiff_t>(r * head_dim), head_dim,
                        std::numeric_limits<float>::quiet_NaN());
        }
    }
    return words;
}

}  // namespace vkf::test
