#pragma once
// What the attention suites with NaN-poisoned keys (paged, window) need of a quantized K/V
// cache: the blocks of a tensor whose unseen key rows are NaN.

#include "host/quant/kv_quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace vkf::test {

// Key rows (row_values = n_kv_head * head_dim values) of `x` quantized, those that are NaN (no
// key of a sequence, or unseen) as all-ones words (a NaN scale: any value read from one is
// NaN); `x` becomes the values the blocks stand for (NaN rows stay NaN).
inline std::vector<std::uint32_t> quantize_poisoned(std::vector<float>& x, QuantFormat quant,
                                                    std::uint32_t row_values) {
    std::vector<float> finite = x;
    std::vector<bool> dead(x.size() / row_values);
    for (std::size_t r = 0; r < dead.size(); ++r) {
        dead[r] = std::isnan(x[r * row_values]);
        if (dead[r]) {
            std::fill_n(finite.begin() + static_cast<std::ptrdiff_t>(r * row_values), row_values, 0.0f);
        }
    }
    std::vector<std::uint32_t> words = kv_quantize(quant, finite, row_values);
    x = kv_dequantize(quant, words, row_values);
    const std::size_t row_words = words.size() / dead.size();
    for (std::size_t r = 0; r < dead.size(); ++r) {
        if (dead[r]) {
            std::fill_n(words.begin() + static_cast<std::ptrdiff_t>(r * row_words), row_words, 0xFFFFFFFFu);
            std::fill_n(x.begin() + static_cast<std::ptrdiff_t>(r * row_values), row_values,
                        std::numeric_limits<float>::quiet_NaN());
        }
    }
    return words;
}

}  // namespace vkf::test
