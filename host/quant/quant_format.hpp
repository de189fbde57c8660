#pragma once
// The block-quantized weight formats (docs/QUANTIZATION.md has the byte layout): a matrix
// [rows, k] is cut along k into blocks of 32 weights, each stored as small integers and one
// fp16 scale. On the device and in files a quantized matrix is two planes:
//   values  [rows, k * bits / 8] bytes, the blocks of a row one after the other;
//   scales  [rows, k / 32] fp16, one per block.
//   q8_0  32 int8 values (two's complement) per block; weight = value * scale.
//   q4_0  16 bytes per block; byte i holds element i in its low nibble and element i + 16
//         in its high nibble (GGML's order); weight = (nibble - 8) * scale.
// Dequantization is exact in fp32 (a value of at most 8 bits times an 11-bit significand),
// so the CPU (dequantize_row) and every kernel see bit-identical weights.

#include "host/util/dtype.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vkf {

// Q2_K .. Q6_K are ggml's K-quant super-blocks and Q4_1, Q5_0, Q5_1 its 32-weight blocks
// with the scale inside (host/quant/kquant_format.hpp), held on the device as the GGUF file
// stores them, one plane of whole blocks: they have no values and scales planes, and the
// functions below that speak of those refuse them.
enum class QuantFormat : std::uint32_t {
    None = 0,
    Q8_0 = 1,
    Q4_0 = 2,
    Q4_K = 3,
    Q5_K = 4,
    Q6_K = 5,
    Q2_K = 6,
    Q3_K = 7,
    Q4_1 = 8,
    Q5_0 = 9,
    Q5_1 = 10
};

inline constexpr std::uint32_t kQuantBlock = 32;  // weights per block, along k

// "none", "q8_0", "q4_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q4_1", "q5_0", "q5_1".
const char* to_string(QuantFormat format);
// The inverse of to_string for "q8_0" and "q4_0"; nullopt for anything else.
std::optional<QuantFormat> parse_quant_format(std::string_view name);
// The same for every stored format, the K-quants and q4_1, q5_0, q5_1 too (a checkpoint's
// metadata: a GGUF file's matrices read as stored). vkformer quantizes to q8_0 and q4_0 only.
std::optional<QuantFormat> parse_stored_quant_format(std::string_view name);

// Whether `format` is held as ggml stores it, one plane of whole blocks with their scales
// inside: the K-quants and Q4_1, Q5_0, Q5_1 (read by the K-quant kernels, matmul_kquant.comp).
bool is_kquant(QuantFormat format);

// Bits of one stored value: 8 or 4 (q8_0, q4_0; vkf::Error for the K-quants).
std::uint32_t quant_bits(QuantFormat format);
// Bytes of one block's values: 32 (q8_0) or 16 (q4_0).
std::uint32_t quant_block_bytes(QuantFormat format);
// Bytes of one row's values and number of its scales. Throw vkf::Error when k is not a
// positive multiple of kQuantBlock, naming `what` (a tensor).
std::uint64_t quant_row_bytes(QuantFormat format, std::uint64_t k, std::string_view what = "matrix");
std::uint64_t quant_row_scales(std::uint64_t k, std::string_view what = "matrix");
// Device/file bytes of a [rows, k] matrix: values plus fp16 scales.
std::uint64_t quant_matrix_bytes(QuantFormat format, std::uint64_t rows, std::uint64_t k);

// Quantizes one row of x.size() weights (a multiple of kQuantBlock) into values
// (quant_row_bytes) and scales (x.size() / 32 fp16 bit patterns). Each block's scale is
// chosen, then rounded to fp16, and the values are rounded against the rounded scale, so
// the stored pair reproduces the weights as closely as the format allows:
//   q8_0: scale = max|x| / 127, value = round(x / scale) in [-127, 127];
//   q4_0: scale = m / -8 where m is the element of largest magnitude (its sign kept), so m
//         maps exactly to nibble 0; nibble = clamp(round(x / scale) + 8, 0, 15).
// An all-zero block gets scale 0. Throws vkf::Error naming `what` for a non-finite weight
// or a scale that overflows fp16.
void quantize_row(QuantFormat format, std::span<const float> x, std::span<std::uint8_t> values,
                  std::span<std::uint16_t> scales, std::string_view what = "matrix");
// The exact fp32 weights a quantized row stands for.
void dequantize_row(QuantFormat format, std::span<const std::uint8_t> values, std::span<const std::uint16_t> scales,
                    std::span<float> out);

// How a model's weights are stored on the device: the matrices (quantized_role in
// host/quant/quantized_checkpoint.hpp) in `quant` blocks, or dense in `dense` when quant is
// None; every other tensor (norms, biases) in `dense`. Quantized models keep those fp16.
struct WeightFormat {
    DType dense = DType::F32;
    QuantFormat quant = QuantFormat::None;
    bool operator==(const WeightFormat&) const = default;
};
// "f32", "f16", "q8_0", "q4_0": the names of vkf-run's --weights.
std::string to_string(WeightFormat format);
std::optional<WeightFormat> parse_weight_format(std::string_view name);

}  // namespace vkf
