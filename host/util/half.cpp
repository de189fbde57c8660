#include "host/util/half.hpp"

#include "host/util/endian.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace vkf {
namespace {

constexpr std::uint32_t f32_exponent_bias = 127;
constexpr std::uint32_t f16_exponent_bias = 15;
constexpr std::uint32_t f32_mantissa_bits = 23;
constexpr std::uint32_t f16_mantissa_bits = 10;
constexpr std::uint32_t dropped_bits = f32_mantissa_bits - f16_mantissa_bits;  // 13

constexpr std::uint16_t f16_infinity = 0x7c00;
constexpr std::uint16_t f16_quiet_bit = 0x0200;

// Shifts `value` right by `shift` bits, rounding to nearest with ties to even.
std::uint32_t shift_right_round_even(std::uint32_t value, std::uint32_t shift) {
    const std::uint32_t kept = value >> shift;
    const std::uint32_t remainder = value & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    const bool round_up = remainder > halfway || (remainder == halfway && (kept & 1u) != 0);
    return kept + (round_up ? 1u : 0u);
}

void require_same_size(std::size_t in_size, std::size_t out_size, const char* what) {
    if (in_size != out_size) {
        throw Error(std::string(what) + ": input has " + fmt::to_string(in_size) + " elements but output has " +
                    fmt::to_string(out_size));
    }
}

// Every binary16 value as a float: a 256 KiB table turns the conversion of a
// gigabyte-sized embedding from seconds into a memory-bound copy.
const std::vector<float>& half_table() {
    static const std::vector<float> table = [] {
        std::vector<float> values(65536);
        for (std::uint32_t bits = 0; bits < values.size(); ++bits) {
            values[bits] = half_to_float(static_cast<std::uint16_t>(bits));
        }
        return values;
    }();
    return table;
}

}  // namespace

std::uint16_t float_to_half(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t exponent = (bits >> f32_mantissa_bits) & 0xffu;
    const std::uint32_t mantissa = bits & 0x7fffffu;

    if (exponent == 0xffu) {
        if (mantissa == 0) {
            return sign | f16_infinity;
        }
        // Force the quiet bit so that a payload living only in the dropped low bits
        // cannot turn the NaN into an infinity.
        return static_cast<std::uint16_t>(sign | f16_infinity | f16_quiet_bit | (mantissa >> dropped_bits));
    }

    // Unbiased exponents map to binary16 normals when the biased half exponent is 1..30.
    const std::int32_t half_exponent = static_cast<std::int32_t>(exponent) -
                                       static_cast<std::int32_t>(f32_exponent_bias) +
                                       static_cast<std::int32_t>(f16_exponent_bias);
    if (half_exponent >= 31) {
        return sign | f16_infinity;
    }
    if (half_exponent >= 1) {
        // A carry out of the mantissa correctly bumps the exponent, up to infinity.
        const std::uint32_t magnitude =
            (static_cast<std::uint32_t>(half_exponent) << f16_mantissa_bits) | (mantissa >> dropped_bits);
        const std::uint32_t remainder = mantissa & ((1u << dropped_bits) - 1u);
        const std::uint32_t halfway = 1u << (dropped_bits - 1u);
        const bool round_up = remainder > halfway || (remainder == halfway && (magnitude & 1u) != 0);
        return static_cast<std::uint16_t>(sign | (magnitude + (round_up ? 1u : 0u)));
    }

    // Binary16 subnormal range: the result is significand * 2^-24 with the implicit bit
    // made explicit. Below 2^-25 (shift > 24) everything rounds to zero, including fp32
    // subnormals.
    const std::uint32_t shift = static_cast<std::uint32_t>(14 - half_exponent);
    if (shift > 24) {
        return sign;
    }
    const std::uint32_t significand = mantissa | (1u << f32_mantissa_bits);
    // Rounding up from the largest subnormal yields 0x400, the smallest normal: correct.
    return static_cast<std::uint16_t>(sign | shift_right_round_even(significand, shift));
}

float half_to_float(std::uint16_t bits) {
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> f16_mantissa_bits) & 0x1fu;
    const std::uint32_t mantissa = bits & 0x3ffu;

    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24 is exact in fp32.
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign != 0 ? -magnitude : magnitude;
    }
    if (exponent == 0x1fu) {
        return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << dropped_bits));
    }
    const std::uint32_t f32_exponent = exponent - f16_exponent_bias + f32_exponent_bias;
    return std::bit_cast<float>(sign | (f32_exponent << f32_mantissa_bits) | (mantissa << dropped_bits));
}

std::uint16_t float_to_bfloat16(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if (std::isnan(value)) {
        // Rounding could carry a NaN into the exponent or drop its payload: quiet it.
        return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
    }
    // Adding 0x7fff plus the lowest kept bit rounds ties to even; a carry into the
    // exponent is correct, including overflow to infinity.
    const std::uint32_t lowest_kept_bit = (bits >> 16) & 1u;
    return static_cast<std::uint16_t>((bits + 0x7fffu + lowest_kept_bit) >> 16);
}

float bfloat16_to_float(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

void floats_to_halves(std::span<const float> in, std::span<std::uint16_t> out) {
    require_same_size(in.size(), out.size(), "floats_to_halves");
    for (std::size_t i = 0; i < in.size(); ++i) {
        out[i] = float_to_half(in[i]);
    }
}

void halves_to_floats(std::span<const std::uint16_t> in, std::span<float> out) {
    require_same_size(in.size(), out.size(), "halves_to_floats");
    for (std::size_t i = 0; i < in.size(); ++i) {
        out[i] = half_to_float(in[i]);
    }
}

void floats_to_bfloat16s(std::span<const float> in, std::span<std::uint16_t> out) {
    require_same_size(in.size(), out.size(), "floats_to_bfloat16s");
    for (std::size_t i = 0; i < in.size(); ++i) {
        out[i] = float_to_bfloat16(in[i]);
    }
}

void bfloat16s_to_floats(std::span<const std::uint16_t> in, std::span<float> out) {
    require_same_size(in.size(), out.size(), "bfloat16s_to_floats");
    for (std::size_t i = 0; i < in.size(); ++i) {
        out[i] = bfloat16_to_float(in[i]);
    }
}

std::vector<std::uint16_t> floats_to_halves(std::span<const float> in) {
    std::vector<std::uint16_t> out(in.size());
    floats_to_halves(in, out);
    return out;
}

std::vector<float> halves_to_floats(std::span<const std::uint16_t> in) {
    std::vector<float> out(in.size());
    halves_to_floats(in, out);
    return out;
}

std::vector<std::uint16_t> floats_to_bfloat16s(std::span<const float> in) {
    std::vector<std::uint16_t> out(in.size());
    floats_to_bfloat16s(in, out);
    return out;
}

std::vector<float> bfloat16s_to_floats(std::span<const std::uint16_t> in) {
    std::vector<float> out(in.size());
    bfloat16s_to_floats(in, out);
    return out;
}

void convert_to_f32(DType dtype, std::span<const std::byte> raw, std::span<float> out) {
    if (!is_supported_float(dtype)) {
        throw Error("convert_to_f32: dtype " + std::string(dtype_name(dtype)) + " is not one of F32, F16, BF16");
    }
    const std::size_t size = element_size(dtype);
    if (raw.size() != out.size() * size) {
        throw Error("convert_to_f32: " + fmt::to_string(raw.size()) + " bytes of " + std::string(dtype_name(dtype)) +
                    " do not make " + fmt::to_string(out.size()) + " elements");
    }
    const std::byte* bytes = raw.data();
    switch (dtype) {
        case DType::F32:
            for (std::size_t i = 0; i < out.size(); ++i) {
                out[i] = std::bit_cast<float>(load_le<std::uint32_t>(bytes + 4 * i));
            }
            break;
        case DType::F16: {
            const std::vector<float>& table = half_table();
            for (std::size_t i = 0; i < out.size(); ++i) {
                out[i] = table[load_le<std::uint16_t>(bytes + 2 * i)];
            }
            break;
        }
        case DType::BF16:
            for (std::size_t i = 0; i < out.size(); ++i) {
                out[i] = std::bit_cast<float>(std::uint32_t{load_le<std::uint16_t>(bytes + 2 * i)} << 16);
            }
            break;
        default:
            break;
    }
}

std::vector<float> rounded_to(DType dtype, std::span<const float> values) {
    if (dtype == DType::F16) {
        return halves_to_floats(floats_to_halves(values));
    }
    return std::vector<float>(values.begin(), values.end());
}

std::optional<std::size_t> first_half_overflow(std::span<const float> values, std::span<const std::uint16_t> halves) {
    for (std::size_t i = 0; i < values.size() && i < halves.size(); ++i) {
        if (std::isfinite(values[i]) && !std::isfinite(half_to_float(halves[i]))) {
            return i;
        }
    }
    return std::nullopt;
}

}  // namespace vkf
