#pragma once
// ggml's K-quant weight blocks (docs/QUANTIZATION.md has each byte layout), read as a GGUF
// file stores them: a row is cut along k into super-blocks of 256 weights, each with one or
// two fp16 super-block scales and 16 or 8 sub-block scales of 4, 6 or 8 bits.
//   Q2_K  84 bytes: scales[16] (low nibble scale, high nibble min), qs[64] (2 bits), d, dmin
//   Q3_K 110 bytes: hmask[32] (3rd bit), qs[64] (2 bits), scales[12] (16 x 6 bits), d
//   Q4_K 144 bytes: d, dmin, scales[12] (8 scales and 8 mins of 6 bits), qs[128] (4 bits)
//   Q5_K 176 bytes: d, dmin, scales[12] (as Q4_K), qh[32] (5th bit), qs[128] (low 4 bits)
//   Q6_K 210 bytes: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8), d
// ggml's older 32-weight blocks with a min or a fifth bit are read the same way, as stored
// (one plane of whole blocks, the fp16 scales inside), by the same kernels:
//   Q4_1  20 bytes: d, m, qs[16] (element l low nibble, l + 16 high); weight q * d + m
//   Q5_0  22 bytes: d, qh[4] (bit l: fifth bit of element l), qs[16]; weight (q - 16) * d
//   Q5_1  24 bytes: d, m, qh[4], qs[16]; weight q * d + m
// Dequantization is ggml's float arithmetic, operation for operation: fp32 products of the
// fp16 super-block scale and the small integers, the min subtracted last, never fused into
// one rounding (kquant_format.cpp is compiled with -ffp-contract=off), so the weights equal
// ggml's to_float bit for bit (tests/quant/test_kquant_ggml.cpp checks that against
// llama.cpp's library).

#include "host/io/gguf.hpp"
#include "host/quant/quant_format.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace vkf {

inline constexpr std::uint32_t kKQuantBlock = 256;  // weights per K-quant super-block, along k

// The types read as stored: Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (not Q8_K, ggml's activation
// type), and Q4_1, Q5_0 and Q5_1.
bool is_kquant(GgmlType type);
// Bytes of one block (84, 110, 144, 176, 210; 20, 22, 24). Throws vkf::Error for another type.
std::uint32_t kquant_block_bytes(GgmlType type);
// Weights of one block along k: 256 (K-quants) or 32 (Q4_1, Q5_0, Q5_1).
std::uint32_t kquant_block_weights(GgmlType type);
// Bytes of one row of k weights. Throws vkf::Error naming `what` (a tensor) when k is not a
// positive multiple of the block's weights or the type is not read as stored.
std::uint64_t kquant_row_bytes(GgmlType type, std::uint64_t k, std::string_view what = "matrix");

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block's scales[12]: bytes
// 0-3 hold the scales of sub-blocks 0-3 and 4-7 their mins in their low 6 bits; bytes 8-11
// hold sub-blocks 4-7's low 4 bits (scale low nibble, min high nibble), whose top 2 bits are
// the top 2 bits of bytes 0-3 (scales) and 4-7 (mins).
struct ScaleMin {
    std::uint8_t scale = 0, min = 0;
};
ScaleMin kquant_scale_min(std::span<const std::uint8_t, 12> scales, std::uint32_t j);
// The 6-bit scale (0..63, before ggml's - 32) of sub-block j (0..15) of a Q3_K block's
// scales[12]: the low 4 bits are nibbles of bytes 0-7 (j < 8: low nibble of byte j, else
// high nibble of byte j - 8), the high 2 bits are bit pair j / 4 of byte 8 + j % 4.
std::uint8_t q3k_scale(std::span<const std::uint8_t, 12> scales, std::uint32_t j);

// The ggml type of a QuantFormat read as stored (is_kquant), and the QuantFormat of such a
// ggml type (nullopt for the others).
GgmlType kquant_ggml_type(QuantFormat format);
std::optional<QuantFormat> kquant_format_of(GgmlType type);

// The exact fp32 weights of one row: blocks holds out.size() / kquant_block_weights blocks.
// Throws vkf::Error when the sizes disagree or the type is not read as stored.
void dequantize_kquant_row(GgmlType type, std::span<const std::uint8_t> blocks, std::span<float> out);

}  // namespace vkf
