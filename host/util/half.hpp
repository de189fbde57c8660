#pragma once
// Conversions between fp32 and the 16-bit storage formats the shaders read and write:
// IEEE binary16 ("half") and bfloat16. Bit patterns travel as std::uint16_t so that no
// compiler extension type (_Float16, __bf16) is needed on the host.

#include "host/util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace vkf {

// Round to nearest, ties to even. Values too large for binary16 become +-inf, values too
// small become (signed) subnormals or zero; NaN stays NaN (quiet, sign and top payload
// bits kept).
std::uint16_t float_to_half(float value);
// Exact: every binary16 value is representable in fp32.
float half_to_float(std::uint16_t bits);

// Round to nearest, ties to even; NaN stays NaN (quiet).
std::uint16_t float_to_bfloat16(float value);
// Exact: bfloat16 is the upper half of an fp32.
float bfloat16_to_float(std::uint16_t bits);

// Whole-array conversions. The span-to-span forms throw vkf::Error when the sizes differ.
void floats_to_halves(std::span<const float> in, std::span<std::uint16_t> out);
void halves_to_floats(std::span<const std::uint16_t> in, std::span<float> out);
void floats_to_bfloat16s(std::span<const float> in, std::span<std::uint16_t> out);
void bfloat16s_to_floats(std::span<const std::uint16_t> in, std::span<float> out);

std::vector<std::uint16_t> floats_to_halves(std::span<const float> in);
std::vector<float> halves_to_floats(std::span<const std::uint16_t> in);
std::vector<std::uint16_t> floats_to_bfloat16s(std::span<const float> in);
std::vector<float> bfloat16s_to_floats(std::span<const std::uint16_t> in);

// The index of the first finite value that its fp16 conversion `halves` turned into +-inf
// (too large for fp16), or nullopt. Weight loaders refuse such tensors by name.
std::optional<std::size_t> first_half_overflow(std::span<const float> values, std::span<const std::uint16_t> halves);

// Decodes `raw`, little-endian elements of an F32, F16 or BF16 tensor (or a slice of one),
// into float32. Throws vkf::Error for other dtypes or when out.size() does not match.
void convert_to_f32(DType dtype, std::span<const std::byte> raw, std::span<float> out);

// The values a tensor of `dtype` holds: F16 rounds every value to the nearest half, F32
// (and every other dtype) returns them unchanged. Tests give the CPU reference exactly what
// the GPU reads.
std::vector<float> rounded_to(DType dtype, std::span<const float> values);

}  // namespace vkf
