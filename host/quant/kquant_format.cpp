#include "host/quant/kquant_format.hpp"

#include "base/error.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>

namespace vkf {
namespace {

float half_at(std::span<const std::uint8_t> bytes, std::size_t offset) {
    return half_to_float(static_cast<std::uint16_t>(bytes[offset] | (bytes[offset + 1] << 8)));
}

// Each decoder writes the 256 weights of one super-block `b` into `y`, with ggml's operation
// order (see the header): a float scale times an integer, then the min subtracted.

void q2k_block(std::span<const std::uint8_t> b, float* y) {
    const std::uint8_t* scales = b.data();
    const std::uint8_t* q = b.data() + 16;
    const float d = half_at(b, 80), dmin = half_at(b, 82);
    // 128 weights per 32 bytes of qs: four 2-bit planes, each two sub-blocks of 16.
    for (std::uint32_t half = 0, is = 0; half < 2; ++half, q += 32) {
        for (std::uint32_t shift = 0; shift < 8; shift += 2) {
            for (std::uint32_t part = 0; part < 2; ++part, ++is) {
                const float dl = d * static_cast<float>(scales[is] & 0xF);
                const float ml = dmin * static_cast<float>(scales[is] >> 4);
                for (std::uint32_t l = 0; l < 16; ++l) {
                    *y++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

void q3k_block(std::span<const std::uint8_t> b, float* y) {
    const std::uint8_t* hmask = b.data();
    const std::uint8_t* q = b.data() + 32;
    const std::span<const std::uint8_t, 12> scales(b.data() + 96, 12);
    const float d = half_at(b, 108);
    std::uint8_t bit = 1;
    for (std::uint32_t half = 0, is = 0; half < 2; ++half, q += 32) {
        for (std::uint32_t shift = 0; shift < 8; shift += 2, bit = static_cast<std::uint8_t>(bit << 1)) {
            for (std::uint32_t part = 0; part < 2; ++part, ++is) {
                const float dl = d * static_cast<float>(static_cast<int>(q3k_scale(scales, is)) - 32);
                for (std::uint32_t l = 0; l < 16; ++l) {
                    const std::uint32_t i = 16 * part + l;
                    const int value = ((q[i] >> shift) & 3) - ((hmask[i] & bit) != 0 ? 0 : 4);
                    *y++ = dl * static_cast<float>(value);
                }
            }
        }
    }
}

// Q4_K and Q5_K: 64 weights per 32 bytes of qs, low nibbles then high nibbles; Q5_K's fifth
// bit of sub-block j is bit j of qh[l].
void q45k_block(std::span<const std::uint8_t> b, float* y, bool five) {
    const float d = half_at(b, 0), dmin = half_at(b, 2);
    const std::span<const std::uint8_t, 12> scales(b.data() + 4, 12);
    const std::uint8_t* qh = b.data() + 16;
    const std::uint8_t* q = b.data() + (five ? 48 : 16);
    for (std::uint32_t j = 0; j < 8; ++j) {
        const ScaleMin sm = kquant_scale_min(scales, j);
        const float dl = d * static_cast<float>(sm.scale);
        const float ml = dmin * static_cast<float>(sm.min);
        const std::uint8_t* qs = q + 32 * (j / 2);
        const std::uint32_t shift = 4 * (j % 2);
        for (std::uint32_t l = 0; l < 32; ++l) {
            int value = (qs[l] >> shift) & 0xF;
            if (five && ((qh[l] >> j) & 1) != 0) {
                value += 16;
            }
            *y++ = dl * static_cast<float>(value) - ml;
        }
    }
}

void q6k_block(std::span<const std::uint8_t> b, float* y) {
    const std::uint8_t* ql = b.data();
    const std::uint8_t* qh = b.data() + 128;
    const std::uint8_t* sc = b.data() + 192;
    const float d = half_at(b, 208);
    // 128 weights per 64 bytes of ql and 32 of qh: four groups of 32, each two sub-blocks of 16.
    for (std::uint32_t half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
        for (std::uint32_t l = 0; l < 32; ++l) {
            for (std::uint32_t g = 0; g < 4; ++g) {
                const int low = (ql[l + 32 * (g % 2)] >> (4 * (g / 2))) & 0xF;
                const int value = (low | (((qh[l] >> (2 * g)) & 3) << 4)) - 32;
                const float scale = static_cast<float>(static_cast<std::int8_t>(sc[l / 16 + 2 * g]));
                y[l + 32 * g] = d * scale * static_cast<float>(value);
            }
        }
    }
}

// Q4_1, Q5_0 and Q5_1, one block of 32: element l (0..15) in the low nibble of qs[l], l + 16
// in the high nibble; the fifth bit of element e is bit e of the little-endian word qh.
void legacy_block(GgmlType type, std::span<const std::uint8_t> b, float* y) {
    const bool has_min = type != GgmlType::Q5_0;
    const bool five = type != GgmlType::Q4_1;
    const float d = half_at(b, 0);
    const float m = has_min ? half_at(b, 2) : 0.0f;
    const std::size_t qh_at = has_min ? 4 : 2;
    const std::uint8_t* qs = b.data() + qh_at + (five ? 4 : 0);
    std::uint32_t qh = 0;
    if (five) {
        qh = static_cast<std::uint32_t>(b[qh_at] | (b[qh_at + 1] << 8) | (b[qh_at + 2] << 16)) |
             (static_cast<std::uint32_t>(b[qh_at + 3]) << 24);
    }
    for (std::uint32_t e = 0; e < 32; ++e) {
        int value = (qs[e % 16] >> (4 * (e / 16))) & 0xF;
        if (five) {
            value |= static_cast<int>(((qh >> e) & 1) << 4);
        }
        // ggml: x * d + m with the min (Q4_1, Q5_1), (x - 16) * d without (Q5_0).
        y[e] = has_min ? static_cast<float>(value) * d + m : static_cast<float>(value - 16) * d;
    }
}

}  // namespace

bool is_kquant(GgmlType type) {
    switch (type) {
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
            return true;
        default:
            return false;
    }
}

std::uint32_t kquant_block_bytes(GgmlType type) {
    switch (type) {
        case GgmlType::Q2_K:
            return 84;
        case GgmlType::Q3_K:
            return 110;
        case GgmlType::Q4_K:
            return 144;
        case GgmlType::Q5_K:
            return 176;
        case GgmlType::Q6_K:
            return 210;
        case GgmlType::Q4_1:
            return 20;
        case GgmlType::Q5_0:
            return 22;
        case GgmlType::Q5_1:
            return 24;
        default:
            throw Error(
                fmt::format("{} is not one of the types read as stored (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q4_1, "
                            "Q5_0, Q5_1)",
                            ggml_type_name(type)));
    }
}

std::uint32_t kquant_block_weights(GgmlType type) {
    kquant_block_bytes(type);  // refuses the other types
    return type == GgmlType::Q4_1 || type == GgmlType::Q5_0 || type == GgmlType::Q5_1 ? kQuantBlock : kKQuantBlock;
}

std::uint64_t kquant_row_bytes(GgmlType type, std::uint64_t k, std::string_view what) {
    const std::uint32_t block = kquant_block_bytes(type);
    const std::uint32_t weights = kquant_block_weights(type);
    if (k == 0 || k % weights != 0) {
        throw Error(fmt::format("{}: rows of {} weights cannot be {}; its rows are whole blocks of {}", what, k,
                                ggml_type_name(type), weights));
    }
    return k / weights * block;
}

GgmlType kquant_ggml_type(QuantFormat format) {
    switch (format) {
        case QuantFormat::Q2_K:
            return GgmlType::Q2_K;
        case QuantFormat::Q3_K:
            return GgmlType::Q3_K;
        case QuantFormat::Q4_K:
            return GgmlType::Q4_K;
        case QuantFormat::Q5_K:
            return GgmlType::Q5_K;
        case QuantFormat::Q6_K:
            return GgmlType::Q6_K;
        case QuantFormat::Q4_1:
            return GgmlType::Q4_1;
        case QuantFormat::Q5_0:
            return GgmlType::Q5_0;
        case QuantFormat::Q5_1:
            return GgmlType::Q5_1;
        default:
            throw Error(fmt::format("{} is not a format read as ggml stores it", to_string(format)));
    }
}

std::optional<QuantFormat> kquant_format_of(GgmlType type) {
    switch (type) {
        case GgmlType::Q2_K:
            return QuantFormat::Q2_K;
        case GgmlType::Q3_K:
            return QuantFormat::Q3_K;
        case GgmlType::Q4_K:
            return QuantFormat::Q4_K;
        case GgmlType::Q5_K:
            return QuantFormat::Q5_K;
        case GgmlType::Q6_K:
            return QuantFormat::Q6_K;
        case GgmlType::Q4_1:
            return QuantFormat::Q4_1;
        case GgmlType::Q5_0:
            return QuantFormat::Q5_0;
        case GgmlType::Q5_1:
            return QuantFormat::Q5_1;
        default:
            return std::nullopt;
    }
}

ScaleMin kquant_scale_min(std::span<const std::uint8_t, 12> q, std::uint32_t j) {
    if (j < 4) {
        return {static_cast<std::uint8_t>(q[j] & 63), static_cast<std::uint8_t>(q[j + 4] & 63)};
    }
    return {static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4)),
            static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4))};
}

std::uint8_t q3k_scale(std::span<const std::uint8_t, 12> q, std::uint32_t j) {
    const std::uint32_t low = j < 8 ? q[j] & 0xF : q[j - 8] >> 4;
    const std::uint32_t high = (q[8 + j % 4] >> (2 * (j / 4))) & 3;
    return static_cast<std::uint8_t>(low | (high << 4));
}

void dequantize_kquant_row(GgmlType type, std::span<const std::uint8_t> blocks, std::span<float> out) {
    const std::uint64_t row_bytes = kquant_row_bytes(type, out.size(), "dequantize_kquant_row");
    if (blocks.size() != row_bytes) {
        throw Error(fmt::format("dequantize_kquant_row: {} bytes of {} are not a row of {} weights ({} bytes)",
                                blocks.size(), ggml_type_name(type), out.size(), row_bytes));
    }
    const std::uint32_t block = kquant_block_bytes(type);
    const std::uint32_t weights = kquant_block_weights(type);
    for (std::size_t i = 0; i < out.size() / weights; ++i) {
        const std::span<const std::uint8_t> b = blocks.subspan(i * block, block);
        float* y = out.data() + i * weights;
        switch (type) {
            case GgmlType::Q4_1:
            case GgmlType::Q5_0:
            case GgmlType::Q5_1:
                legacy_block(type, b, y);
                break;
            case GgmlType::Q2_K:
                q2k_block(b, y);
                break;
            case GgmlType::Q3_K:
                q3k_block(b, y);
                break;
            case GgmlType::Q4_K:
                q45k_block(b, y, false);
                break;
            case GgmlType::Q5_K:
                q45k_block(b, y, true);
                break;
            default:
                q6k_block(b, y);
                break;
        }
    }
}

}  // namespace vkf
