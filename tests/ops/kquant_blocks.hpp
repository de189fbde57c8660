#pragma once
// Random blocks of the types read as stored (the K-quants' super-blocks, Q4_1, Q5_0 and
// Q5_1's blocks of 32) for the kernel suites (test_matmul_kquant.cpp,
// test_embedding_kquant.cpp): any bytes, with finite fp16 scales.

#include "host/quant/kquant_format.hpp"
#include "host/util/half.hpp"

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace vkf::test {

// Random super-blocks of `rows` rows of k weights: any bytes, with the fp16 super-block
// scales (d, dmin) finite and sized so that weights stay near [-1, 1].
inline std::vector<std::uint8_t> random_blocks(QuantFormat quant, std::uint32_t rows, std::uint32_t k,
                                               std::uint64_t seed) {
    const GgmlType type = kquant_ggml_type(quant);
    const std::uint32_t block = kquant_block_bytes(type);
    std::vector<std::uint8_t> bytes(rows * kquant_row_bytes(type, k));
    std::mt19937_64 rng(seed);
    for (std::uint8_t& b : bytes) {
        b = static_cast<std::uint8_t>(rng());
    }
    std::uniform_real_distribution<float> scale(-1.0f, 1.0f);
    // Largest |scale * value|: Q2_K 15 * 3, Q3_K 32 * 4, Q4_K 63 * 15, Q5_K 63 * 31, Q6_K 128 * 32,
    // Q4_1 15, Q5_0 16, Q5_1 31.
    const float span = quant == QuantFormat::Q2_K                                 ? 1.0f / 64
                       : quant == QuantFormat::Q3_K                               ? 1.0f / 128
                       : quant == QuantFormat::Q6_K                               ? 1.0f / 4096
                       : quant == QuantFormat::Q4_1 || quant == QuantFormat::Q5_0 ? 1.0f / 16
                       : quant == QuantFormat::Q5_1                               ? 1.0f / 32
                                                                                  : 1.0f / 1024;
    const std::vector<std::size_t> halves = quant == QuantFormat::Q2_K   ? std::vector<std::size_t>{80, 82}
                                            : quant == QuantFormat::Q3_K ? std::vector<std::size_t>{108}
                                            : quant == QuantFormat::Q6_K ? std::vector<std::size_t>{208}
                                            : quant == QuantFormat::Q5_0 ? std::vector<std::size_t>{0}
                                                                         : std::vector<std::size_t>{0, 2};
    for (std::size_t b = 0; b < bytes.size() / block; ++b) {
        for (const std::size_t offset : halves) {
            const std::uint16_t bits = float_to_half(scale(rng) * span);
            bytes[b * block + offset] = static_cast<std::uint8_t>(bits & 0xFF);
            bytes[b * block + offset + 1] = static_cast<std::uint8_t>(bits >> 8);
        }
    }
    return bytes;
}

// Each weight's dmin * min (Q2_K, Q4_K, Q5_K; 0 for Q3_K and Q6_K), what the kernel subtracts;
// for the blocks of 32 -m (Q4_1, Q5_1) or 16 d (Q5_0), so that weight + it = d * q.
inline std::vector<float> mins(QuantFormat quant, std::span<const std::uint8_t> bytes, std::uint32_t rows,
                               std::uint32_t k) {
    std::vector<float> out(std::size_t{rows} * k, 0.0f);
    if (quant == QuantFormat::Q6_K || quant == QuantFormat::Q3_K) {
        return out;
    }
    if (quant == QuantFormat::Q4_1 || quant == QuantFormat::Q5_0 || quant == QuantFormat::Q5_1) {
        const std::uint32_t block = kquant_block_bytes(kquant_ggml_type(quant));
        for (std::size_t e = 0; e < out.size(); ++e) {
            const std::uint8_t* p = bytes.data() + e / kQuantBlock * block;
            const std::size_t at = quant == QuantFormat::Q5_0 ? 0 : 2;
            const float h = half_to_float(static_cast<std::uint16_t>(p[at] | (p[at + 1] << 8)));
            out[e] = quant == QuantFormat::Q5_0 ? 16.0f * h : -h;
        }
        return out;
    }
    if (quant == QuantFormat::Q2_K) {
        // Sub-block e / 16's byte of scales[16]: its min in the high nibble, dmin at byte 82.
        for (std::size_t e = 0; e < out.size(); ++e) {
            const std::uint8_t* p = bytes.data() + e / kKQuantBlock * 84;
            const float dmin = half_to_float(static_cast<std::uint16_t>(p[82] | (p[83] << 8)));
            out[e] = dmin * static_cast<float>(p[e % kKQuantBlock / 16] >> 4);
        }
        return out;
    }
    const std::uint32_t block = kquant_block_bytes(kquant_ggml_type(quant));
    for (std::size_t b = 0; b < out.size() / kKQuantBlock; ++b) {
        const std::uint8_t* p = bytes.data() + b * block;
        const float dmin = half_to_float(static_cast<std::uint16_t>(p[2] | (p[3] << 8)));
        for (std::uint32_t j = 0; j < 8; ++j) {
            const float ml =
                dmin * static_cast<float>(kquant_scale_min(std::span<const std::uint8_t, 12>(p + 4, 12), j).min);
            for (std::uint32_t l = 0; l < 32; ++l) {
                out[b * kKQuantBlock + 32 * j + l] = ml;
            }
        }
    }
    return out;
}

}  // namespace vkf::test
