#include "host/quant/kv_quant.hpp"

#include "base/error.hpp"
#include "shaders/interface/kv_quant.h"

#include <fmt/format.h>

#include <cstring>

namespace vkf {

std::uint32_t kv_format_code(QuantFormat quant) {
    return quant == QuantFormat::Q8_0   ? VKF_KV_FORMAT_Q8_0
           : quant == QuantFormat::Q4_0 ? VKF_KV_FORMAT_Q4_0
                                        : VKF_KV_FORMAT_F16;
}

std::uint64_t kv_row_bytes(DType dense, QuantFormat quant, std::uint32_t row_values) {
    if (quant == QuantFormat::None) {
        return std::uint64_t{row_values} * element_size(dense);
    }
    return std::uint64_t{4} * VKF_KV_ROW_WORDS(kv_format_code(quant), row_values);
}

void check_kv_quant_head_dim(QuantFormat quant, std::uint32_t head_dim, const char* what) {
    if (quant != QuantFormat::None && (head_dim == 0 || head_dim % kQuantBlock != 0)) {
        throw Error(
            fmt::format("{}: a {} cache quantizes blocks of {} values along the head, but the head size is "
                        "{}; use f16 or f32 K/V for this model",
                        what, to_string(quant), kQuantBlock, head_dim));
    }
}

void check_kv_cache_format(DType dense, QuantFormat k, QuantFormat v, std::uint32_t head_dim) {
    const bool quant = k != QuantFormat::None || v != QuantFormat::None;
    if (dense != DType::F16 && (quant || dense != DType::F32)) {
        throw Error(
            fmt::format("KV cache: K in {} and V in {} with {} for a side not quantized; supported: f32 or f16 "
                        "K/V, or q8_0/q4_0 K and V each, the other side f16",
                        k == QuantFormat::None ? to_string(dense) : to_string(k),
                        v == QuantFormat::None ? to_string(dense) : to_string(v), to_string(dense)));
    }
    check_kv_quant_head_dim(k, head_dim, "KV cache (K)");
    check_kv_quant_head_dim(v, head_dim, "KV cache (V)");
}

std::uint64_t kv_token_bytes(DType dense, QuantFormat k, QuantFormat v, std::uint32_t n_kv_head,
                             std::uint32_t head_dim) {
    const std::uint32_t row_values = n_kv_head * head_dim;
    return kv_row_bytes(dense, k, row_values) + kv_row_bytes(dense, v, row_values);
}

std::vector<std::uint32_t> kv_quantize(QuantFormat quant, std::span<const float> x, std::uint32_t row_values) {
    check_kv_quant_head_dim(quant, row_values, "kv_quantize");
    if (quant == QuantFormat::None || x.size() % row_values != 0) {
        throw Error(fmt::format("kv_quantize: {} values are no whole number of {} key rows of {}", x.size(),
                                to_string(quant), row_values));
    }
    const std::size_t rows = x.size() / row_values;
    const std::size_t row_words = kv_row_bytes(DType::F32, quant, row_values) / 4;
    const std::size_t scale_words = VKF_KV_SCALE_WORDS(row_values);
    std::vector<std::uint32_t> words(rows * row_words, 0);
    std::vector<std::uint8_t> values(quant_row_bytes(quant, row_values));
    std::vector<std::uint16_t> scales(row_values / kQuantBlock);
    for (std::size_t r = 0; r < rows; ++r) {
        quantize_row(quant, x.subspan(r * row_values, row_values), values, scales, "KV cache row");
        std::uint32_t* row = words.data() + r * row_words;
        for (std::size_t b = 0; b < scales.size(); ++b) {
            row[b / 2] |= std::uint32_t{scales[b]} << (16 * (b % 2));
        }
        std::memcpy(row + scale_words, values.data(), values.size());  // little-endian, as the device reads it
    }
    return words;
}

std::vector<float> kv_dequantize(QuantFormat quant, std::span<const std::uint32_t> words, std::uint32_t row_values) {
    check_kv_quant_head_dim(quant, row_values, "kv_dequantize");
    const std::size_t row_words = kv_row_bytes(DType::F32, quant, row_values) / 4;
    if (quant == QuantFormat::None || words.size() % row_words != 0) {
        throw Error(fmt::format("kv_dequantize: {} words are no whole number of {} key rows of {}", words.size(),
                                to_string(quant), row_values));
    }
    const std::size_t rows = words.size() / row_words;
    const std::size_t scale_words = VKF_KV_SCALE_WORDS(row_values);
    std::vector<float> out(rows * row_values);
    std::vector<std::uint8_t> values(quant_row_bytes(quant, row_values));
    std::vector<std::uint16_t> scales(row_values / kQuantBlock);
    for (std::size_t r = 0; r < rows; ++r) {
        const std::uint32_t* row = words.data() + r * row_words;
        for (std::size_t b = 0; b < scales.size(); ++b) {
            scales[b] = static_cast<std::uint16_t>(row[b / 2] >> (16 * (b % 2)));
        }
        std::memcpy(values.data(), row + scale_words, values.size());
        dequantize_row(quant, values, scales, std::span(out).subspan(r * row_values, row_values));
    }
    return out;
}

}  // namespace vkf
