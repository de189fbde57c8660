#include "host/quant/quant_format.hpp"

#include "base/error.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace vkf {

namespace {

void check_k(std::uint64_t k, std::string_view what) {
    if (k == 0 || k % kQuantBlock != 0) {
        throw Error(std::string(what) + ": rows of " + fmt::to_string(k) +
                    " weights cannot be block-quantized; the row length must be a positive multiple of " +
                    fmt::to_string(kQuantBlock));
    }
}

// Rounds half away from zero: the values are small integers, the choice only matters at
// exact ties and is documented in docs/QUANTIZATION.md.
int round_to_int(float v) {
    return static_cast<int>(std::round(v));
}

std::uint16_t scale_bits(float scale, std::string_view what, std::size_t block) {
    const std::uint16_t bits = float_to_half(scale);
    if (!std::isfinite(half_to_float(bits))) {
        throw Error(std::string(what) + ": block " + fmt::to_string(block) + " needs a scale of " +
                    fmt::format("{:f}", scale) + ", which does not fit fp16");
    }
    return bits;
}

}  // namespace

const char* to_string(QuantFormat format) {
    switch (format) {
        case QuantFormat::Q8_0:
            return "q8_0";
        case QuantFormat::Q4_0:
            return "q4_0";
        case QuantFormat::Q2_K:
            return "q2_K";
        case QuantFormat::Q3_K:
            return "q3_K";
        case QuantFormat::Q4_K:
            return "q4_K";
        case QuantFormat::Q5_K:
            return "q5_K";
        case QuantFormat::Q6_K:
            return "q6_K";
        case QuantFormat::Q4_1:
            return "q4_1";
        case QuantFormat::Q5_0:
            return "q5_0";
        case QuantFormat::Q5_1:
            return "q5_1";
        default:
            return "none";
    }
}

std::optional<QuantFormat> parse_quant_format(std::string_view name) {
    if (name == "q8_0") {
        return QuantFormat::Q8_0;
    }
    if (name == "q4_0") {
        return QuantFormat::Q4_0;
    }
    return std::nullopt;
}

bool is_kquant(QuantFormat format) {
    return format == QuantFormat::Q2_K || format == QuantFormat::Q3_K || format == QuantFormat::Q4_K ||
           format == QuantFormat::Q5_K || format == QuantFormat::Q6_K || format == QuantFormat::Q4_1 ||
           format == QuantFormat::Q5_0 || format == QuantFormat::Q5_1;
}

std::optional<QuantFormat> parse_stored_quant_format(std::string_view name) {
    for (const QuantFormat f :
         {QuantFormat::Q8_0, QuantFormat::Q4_0, QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_K,
          QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1}) {
        if (name == to_string(f)) {
            return f;
        }
    }
    return std::nullopt;
}

std::uint32_t quant_bits(QuantFormat format) {
    switch (format) {
        case QuantFormat::Q8_0:
            return 8;
        case QuantFormat::Q4_0:
            return 4;
        case QuantFormat::None:
            throw Error("quantization: no block format selected");
        default:
            throw Error(
                fmt::format("quantization: {} is stored as whole ggml blocks, its scales inside; it has no "
                            "values and scales planes of 32-weight blocks",
                            to_string(format)));
    }
}

std::uint32_t quant_block_bytes(QuantFormat format) {
    return kQuantBlock * quant_bits(format) / 8;
}

std::uint64_t quant_row_bytes(QuantFormat format, std::uint64_t k, std::string_view what) {
    check_k(k, what);
    return k / kQuantBlock * quant_block_bytes(format);
}

std::uint64_t quant_row_scales(std::uint64_t k, std::string_view what) {
    check_k(k, what);
    return k / kQuantBlock;
}

std::uint64_t quant_matrix_bytes(QuantFormat format, std::uint64_t rows, std::uint64_t k) {
    return rows * (quant_row_bytes(format, k) + 2 * quant_row_scales(k));
}

void quantize_row(QuantFormat format, std::span<const float> x, std::span<std::uint8_t> values,
                  std::span<std::uint16_t> scales, std::string_view what) {
    const std::uint64_t blocks = quant_row_scales(x.size(), what);
    if (values.size() != quant_row_bytes(format, x.size(), what) || scales.size() != blocks) {
        throw Error(std::string(what) + ": quantize_row was given " + fmt::to_string(values.size()) +
                    " value bytes and " + fmt::to_string(scales.size()) + " scales for a row of " +
                    fmt::to_string(x.size()));
    }
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::span<const float> block = x.subspan(b * kQuantBlock, kQuantBlock);
        float extreme = 0.0f;  // the element of largest magnitude, sign kept
        for (std::size_t i = 0; i < kQuantBlock; ++i) {
            if (!std::isfinite(block[i])) {
                throw Error(std::string(what) + ": element " + fmt::to_string(b * kQuantBlock + i) + " of the row is " +
                            fmt::format("{:f}", block[i]) + "; only finite weights can be quantized");
            }
            if (std::fabs(block[i]) > std::fabs(extreme)) {
                extreme = block[i];
            }
        }
        if (format == QuantFormat::Q8_0) {
            scales[b] = scale_bits(std::fabs(extreme) / 127.0f, what, b);
            const float scale = half_to_float(scales[b]);
            std::span<std::uint8_t> out = values.subspan(b * kQuantBlock, kQuantBlock);
            for (std::size_t i = 0; i < kQuantBlock; ++i) {
                const int q = scale == 0.0f ? 0 : std::clamp(round_to_int(block[i] / scale), -127, 127);
                out[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
            }
        } else {
            scales[b] = scale_bits(extreme / -8.0f, what, b);
            const float scale = half_to_float(scales[b]);
            std::span<std::uint8_t> out = values.subspan(b * kQuantBlock / 2, kQuantBlock / 2);
            const auto nibble = [&](std::size_t i) {
                return scale == 0.0f ? 8u
                                     : static_cast<unsigned>(std::clamp(round_to_int(block[i] / scale) + 8, 0, 15));
            };
            for (std::size_t i = 0; i < kQuantBlock / 2; ++i) {
                out[i] = static_cast<std::uint8_t>(nibble(i) | (nibble(i + kQuantBlock / 2) << 4));
            }
        }
    }
}

void dequantize_row(QuantFormat format, std::span<const std::uint8_t> values, std::span<const std::uint16_t> scales,
                    std::span<float> out) {
    const std::uint64_t blocks = quant_row_scales(out.size(), "dequantize_row");
    if (values.size() != quant_row_bytes(format, out.size()) || scales.size() != blocks) {
        throw Error("dequantize_row: " + fmt::to_string(values.size()) + " value bytes and " +
                    fmt::to_string(scales.size()) + " scales do not make a row of " + fmt::to_string(out.size()));
    }
    for (std::size_t b = 0; b < blocks; ++b) {
        const float scale = half_to_float(scales[b]);
        std::span<float> dst = out.subspan(b * kQuantBlock, kQuantBlock);
        if (format == QuantFormat::Q8_0) {
            for (std::size_t i = 0; i < kQuantBlock; ++i) {
                dst[i] = static_cast<float>(static_cast<std::int8_t>(values[b * kQuantBlock + i])) * scale;
            }
        } else {
            for (std::size_t i = 0; i < kQuantBlock / 2; ++i) {
                const std::uint8_t byte = values[b * kQuantBlock / 2 + i];
                dst[i] = static_cast<float>(static_cast<int>(byte & 0x0F) - 8) * scale;
                dst[i + kQuantBlock / 2] = static_cast<float>(static_cast<int>(byte >> 4) - 8) * scale;
            }
        }
    }
}

std::string to_string(WeightFormat format) {
    if (format.quant != QuantFormat::None) {
        return to_string(format.quant);
    }
    return format.dense == DType::F16   ? "f16"
           : format.dense == DType::F32 ? "f32"
                                        : std::string(dtype_name(format.dense));
}

std::optional<WeightFormat> parse_weight_format(std::string_view name) {
    if (name == "f32") {
        return WeightFormat{.dense = DType::F32};
    }
    if (name == "f16") {
        return WeightFormat{.dense = DType::F16};
    }
    if (const std::optional<QuantFormat> q = parse_quant_format(name)) {
        return WeightFormat{.dense = DType::F16, .quant = *q};
    }
    return std::nullopt;
}

}  // namespace vkf
