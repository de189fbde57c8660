// The q8_0 and q4_0 block formats on the CPU: the documented byte layout, the error bound of
// each format, exact dequantization, and clear errors for rows that cannot be quantized.

#include "base/error.hpp"
#include "host/quant/quant_format.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace vkf {
namespace {

struct Quantized {
    std::vector<std::uint8_t> values;
    std::vector<std::uint16_t> scales;
};

Quantized quantize(QuantFormat f, const std::vector<float>& x) {
    Quantized q{std::vector<std::uint8_t>(quant_row_bytes(f, x.size())),
                std::vector<std::uint16_t>(quant_row_scales(x.size()))};
    quantize_row(f, x, q.values, q.scales, "test row");
    return q;
}

std::vector<float> dequantize(QuantFormat f, const Quantized& q, std::size_t k) {
    std::vector<float> out(k);
    dequantize_row(f, q.values, q.scales, out);
    return out;
}

TEST(QuantFormat, NamesAndSizes) {
    EXPECT_EQ(parse_quant_format("q8_0"), QuantFormat::Q8_0);
    EXPECT_EQ(parse_quant_format("q4_0"), QuantFormat::Q4_0);
    EXPECT_FALSE(parse_quant_format("q4_1").has_value());
    EXPECT_STREQ(to_string(QuantFormat::Q4_0), "q4_0");
    EXPECT_EQ(quant_row_bytes(QuantFormat::Q8_0, 1024), 1024u);
    EXPECT_EQ(quant_row_bytes(QuantFormat::Q4_0, 1024), 512u);
    EXPECT_EQ(quant_row_scales(1024), 32u);
    // BLOOM-560m's table: 250880 x 1024 is 490 MiB in fp16.
    EXPECT_EQ(quant_matrix_bytes(QuantFormat::Q8_0, 250880, 1024), 250880ull * (1024 + 64));
    EXPECT_EQ(quant_matrix_bytes(QuantFormat::Q4_0, 250880, 1024), 250880ull * (512 + 64));
}

TEST(QuantFormat, RowsThatAreNotWholeBlocksAreRefused) {
    for (const std::uint64_t k : {0ull, 31ull, 33ull, 80ull}) {
        try {
            quant_row_bytes(QuantFormat::Q8_0, k, "layer 3 up_proj");
            ADD_FAILURE() << "k = " << k << " accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("layer 3 up_proj"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
        }
    }
}

TEST(QuantFormat, Q8LayoutIsInt8ValuesAndOneHalfScale) {
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) {
        x[i] = static_cast<float>(i - 16) * 0.5f;  // -8 .. 7.5: max |x| = 8
    }
    const Quantized q = quantize(QuantFormat::Q8_0, x);
    EXPECT_EQ(q.scales[0], float_to_half(8.0f / 127.0f));
    const float scale = half_to_float(q.scales[0]);
    for (int i = 0; i < 32; ++i) {
        const auto v = static_cast<std::int8_t>(q.values[i]);
        EXPECT_EQ(v, static_cast<int>(std::round(x[i] / scale))) << i;
    }
    EXPECT_EQ(static_cast<std::int8_t>(q.values[0]), -127);  // the extreme maps to the end of the range
}

TEST(QuantFormat, Q4LayoutPairsElementIWithIPlus16) {
    std::vector<float> x(32, 0.0f);
    x[0] = -8.0f;  // the extreme: scale = -8 / -8 = 1
    x[1] = 3.0f;
    x[16] = 7.0f;
    x[17] = -2.0f;
    x[31] = 100.0f / 128.0f;  // rounds to 1
    const Quantized q = quantize(QuantFormat::Q4_0, x);
    EXPECT_EQ(half_to_float(q.scales[0]), 1.0f);
    EXPECT_EQ(q.values[0], (0 + 8 - 8) | ((7 + 8) << 4));  // elements 0 and 16
    EXPECT_EQ(q.values[1], (3 + 8) | ((-2 + 8) << 4));     // elements 1 and 17
    EXPECT_EQ(q.values[15], 8 | ((1 + 8) << 4));           // elements 15 and 31
    const std::vector<float> back = dequantize(QuantFormat::Q4_0, q, 32);
    EXPECT_EQ(back[0], -8.0f);
    EXPECT_EQ(back[16], 7.0f);
    EXPECT_EQ(back[17], -2.0f);
    EXPECT_EQ(back[31], 1.0f);
}

TEST(QuantFormat, ZeroBlocksHaveScaleZero) {
    for (const QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        const std::vector<float> x(64, 0.0f);
        const Quantized q = quantize(f, x);
        for (const std::uint16_t s : q.scales) {
            EXPECT_EQ(half_to_float(s), 0.0f);
        }
        for (const float v : dequantize(f, q, 64)) {
            EXPECT_EQ(v, 0.0f);
        }
    }
}

// Every weight comes back within half a step of the block's scale (q4_0: the side of the
// extreme's opposite sign can lose one more step, value +8 being out of range).
TEST(QuantFormat, RandomRowsStayWithinTheFormatsErrorBound) {
    for (const QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        const std::size_t k = 32 * 37;
        std::vector<float> x = random_uniform(k, 42, -0.05f, 0.07f);
        const Quantized q = quantize(f, x);
        const std::vector<float> back = dequantize(f, q, k);
        for (std::size_t i = 0; i < k; ++i) {
            const float scale = std::fabs(half_to_float(q.scales[i / 32]));
            const float bound = f == QuantFormat::Q8_0 ? 0.5f * scale * (1 + 1e-3f) : 1.0f * scale * (1 + 1e-3f);
            EXPECT_LE(std::fabs(back[i] - x[i]), bound) << to_string(f) << " element " << i;
        }
        // Quantizing the dequantized weights again gives the same bytes: the round trip is stable.
        const Quantized again = quantize(f, back);
        EXPECT_EQ(again.values, q.values) << to_string(f);
        EXPECT_EQ(again.scales, q.scales) << to_string(f);
    }
}

TEST(QuantFormat, NonFiniteWeightsAndHugeScalesAreRefused) {
    std::vector<float> x(32, 1.0f);
    x[5] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_THROW(quantize(QuantFormat::Q8_0, x), Error);
    x[5] = std::numeric_limits<float>::infinity();
    EXPECT_THROW(quantize(QuantFormat::Q4_0, x), Error);
    x[5] = 3.0e38f;  // the scale, 3e38 / 127, does not fit fp16
    try {
        quantize(QuantFormat::Q8_0, x);
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("fp16"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkf
