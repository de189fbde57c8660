// fp32 <-> binary16 / bfloat16 conversions: exhaustive round trips over every half, ties
// to even at every rounding boundary, overflow, subnormals and NaN.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/error.hpp"
#include "host/util/half.hpp"

namespace {

bool is_half_nan(std::uint16_t h) {
    return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0;
}

float next_up(float x) {
    return std::nextafter(x, std::numeric_limits<float>::infinity());
}

float next_down(float x) {
    return std::nextafter(x, -std::numeric_limits<float>::infinity());
}

TEST(Half, EveryNonNanHalfSurvivesARoundTrip) {
    for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        if (is_half_nan(bits)) {
            continue;
        }
        ASSERT_EQ(vkf::float_to_half(vkf::half_to_float(bits)), bits) << "half 0x" << std::hex << h;
    }
}

TEST(Half, EveryNanHalfStaysNan) {
    for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        if (!is_half_nan(bits)) {
            continue;
        }
        const float f = vkf::half_to_float(bits);
        ASSERT_TRUE(std::isnan(f)) << "half 0x" << std::hex << h;
        const std::uint16_t back = vkf::float_to_half(f);
        ASSERT_TRUE(is_half_nan(back)) << "half 0x" << std::hex << h;
        ASSERT_EQ(back & 0x8000u, bits & 0x8000u) << "sign of NaN 0x" << std::hex << h;
    }
}

TEST(Half, KnownValues) {
    EXPECT_EQ(vkf::float_to_half(0.0f), 0x0000);
    EXPECT_EQ(vkf::float_to_half(-0.0f), 0x8000);
    EXPECT_EQ(vkf::float_to_half(1.0f), 0x3c00);
    EXPECT_EQ(vkf::float_to_half(-2.0f), 0xc000);
    EXPECT_EQ(vkf::float_to_half(0.5f), 0x3800);
    EXPECT_EQ(vkf::float_to_half(65504.0f), 0x7bff);
    EXPECT_EQ(vkf::float_to_half(0.333251953125f), 0x3555);
    EXPECT_EQ(vkf::half_to_float(0x3555), 0.333251953125f);
    EXPECT_EQ(vkf::half_to_float(0x7bff), 65504.0f);
    EXPECT_EQ(vkf::half_to_float(0xfc00), -std::numeric_limits<float>::infinity());
}

// For each pair of neighbouring positive finite halves, the exact midpoint rounds to the
// one with an even mantissa, and the floats just beside it round to the nearer half.
TEST(Half, MidpointsRoundToEven) {
    for (std::uint32_t h = 0; h < 0x7bffu; ++h) {
        const auto lo = static_cast<std::uint16_t>(h);
        const auto hi = static_cast<std::uint16_t>(h + 1);
        // Halves have 11 significant bits, so their midpoint is exact in fp32.
        const float mid = (vkf::half_to_float(lo) + vkf::half_to_float(hi)) / 2.0f;
        const std::uint16_t even = (lo & 1u) == 0 ? lo : hi;
        ASSERT_EQ(vkf::float_to_half(mid), even) << "midpoint above 0x" << std::hex << h;
        ASSERT_EQ(vkf::float_to_half(next_down(mid)), lo) << "below midpoint above 0x" << std::hex << h;
        ASSERT_EQ(vkf::float_to_half(next_up(mid)), hi) << "above midpoint above 0x" << std::hex << h;
        ASSERT_EQ(vkf::float_to_half(-mid), even | 0x8000u) << "negative midpoint 0x" << std::hex << h;
    }
}

TEST(Half, HandPickedTies) {
    // 1 + 2^-11 lies halfway between 1 (0x3c00, even) and 1 + 2^-10 (0x3c01): down.
    EXPECT_EQ(vkf::float_to_half(1.00048828125f), 0x3c00);
    // 1 + 3 * 2^-11 lies halfway between 0x3c01 and 0x3c02 (even): up.
    EXPECT_EQ(vkf::float_to_half(1.00146484375f), 0x3c02);
    // 2049 lies halfway between 2048 (0x6800) and 2050 (0x6801): down to even.
    EXPECT_EQ(vkf::float_to_half(2049.0f), 0x6800);
    // 2051 lies halfway between 2050 (0x6801) and 2052 (0x6802): up to even.
    EXPECT_EQ(vkf::float_to_half(2051.0f), 0x6802);
    // 2^-25 is halfway between 0 and the smallest subnormal 2^-24: down to zero.
    EXPECT_EQ(vkf::float_to_half(0x1p-25f), 0x0000);
    // 3 * 2^-25 is halfway between 2^-24 (0x0001) and 2^-23 (0x0002): up to even.
    EXPECT_EQ(vkf::float_to_half(0x3p-25f), 0x0002);
    // The largest subnormal plus half a step ties to the smallest normal 2^-14 (0x0400).
    EXPECT_EQ(vkf::float_to_half(0x1p-14f - 0x1p-25f), 0x0400);
}

TEST(Half, OverflowGoesToInfinity) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(vkf::float_to_half(65519.0f), 0x7bff);  // below the 65520 midpoint
    EXPECT_EQ(vkf::float_to_half(65520.0f), 0x7c00);  // midpoint ties to the even infinity
    EXPECT_EQ(vkf::float_to_half(-65520.0f), 0xfc00);
    EXPECT_EQ(vkf::float_to_half(1.0e6f), 0x7c00);
    EXPECT_EQ(vkf::float_to_half(std::numeric_limits<float>::max()), 0x7c00);
    EXPECT_EQ(vkf::float_to_half(inf), 0x7c00);
    EXPECT_EQ(vkf::float_to_half(-inf), 0xfc00);
}

TEST(Half, Subnormals) {
    EXPECT_EQ(vkf::float_to_half(0x1p-24f), 0x0001);  // smallest subnormal
    EXPECT_EQ(vkf::half_to_float(0x0001), 0x1p-24f);
    EXPECT_EQ(vkf::float_to_half(0x3ffp-24f), 0x03ff);  // largest subnormal
    EXPECT_EQ(vkf::half_to_float(0x03ff), 0x3ffp-24f);
    EXPECT_EQ(vkf::float_to_half(-0x5p-24f), 0x8005);
    EXPECT_EQ(vkf::half_to_float(0x8005), -0x5p-24f);
    EXPECT_EQ(vkf::float_to_half(0x1p-14f), 0x0400);  // smallest normal
    // Too small for any half: signed zero, including fp32 subnormals.
    EXPECT_EQ(vkf::float_to_half(0x1p-26f), 0x0000);
    EXPECT_EQ(vkf::float_to_half(-0x1p-30f), 0x8000);
    EXPECT_EQ(vkf::float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
    // Just above 2^-25 is nearer to 2^-24 than to zero.
    EXPECT_EQ(vkf::float_to_half(next_up(0x1p-25f)), 0x0001);
}

TEST(Half, NanStaysNan) {
    const float quiet = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(is_half_nan(vkf::float_to_half(quiet)));
    EXPECT_TRUE(is_half_nan(vkf::float_to_half(-quiet)));
    // A NaN whose payload lives only in the low 13 bits must not become infinity.
    EXPECT_TRUE(is_half_nan(vkf::float_to_half(std::bit_cast<float>(0x7f800001u))));
}

#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC before 13 defines __FLT16_MAX__ on aarch64 but has no _Float16 in C++; its __fp16 is
// IEEE binary16 there and converts from float the same way (to nearest, ties to even).
#define VKF_COMPILER_HALF __fp16
#elif defined(__FLT16_MAX__)
#define VKF_COMPILER_HALF _Float16
#endif

#if defined(VKF_COMPILER_HALF)
// Cross-check against the compiler's own conversion where it has a binary16 type.
TEST(Half, MatchesCompilerFloat16) {
    std::uint32_t state = 12345;
    for (int n = 0; n < 1000000; ++n) {
        state = state * 1664525u + 1013904223u;  // LCG: cheap and deterministic
        const float f = std::bit_cast<float>(state);
        if (std::isnan(f)) {
            continue;
        }
        const auto expected = std::bit_cast<std::uint16_t>(static_cast<VKF_COMPILER_HALF>(f));
        ASSERT_EQ(vkf::float_to_half(f), expected) << "float bits 0x" << std::hex << state;
    }
}
#endif

TEST(Bfloat16, KnownValuesAndRounding) {
    EXPECT_EQ(vkf::float_to_bfloat16(1.0f), 0x3f80);
    EXPECT_EQ(vkf::float_to_bfloat16(-2.0f), 0xc000);
    EXPECT_EQ(vkf::bfloat16_to_float(0x3f80), 1.0f);
    // 1 + 2^-8 is halfway between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81): down.
    EXPECT_EQ(vkf::float_to_bfloat16(1.00390625f), 0x3f80);
    // 1 + 3 * 2^-8 is halfway between 0x3f81 and 0x3f82 (even): up.
    EXPECT_EQ(vkf::float_to_bfloat16(1.01171875f), 0x3f82);
    EXPECT_EQ(vkf::float_to_bfloat16(next_up(1.00390625f)), 0x3f81);
    // Rounding up from the largest finite bfloat16 overflows to infinity.
    EXPECT_EQ(vkf::float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);
    EXPECT_EQ(vkf::float_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
}

TEST(Bfloat16, EveryNonNanValueSurvivesARoundTripAndNanStaysNan) {
    for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const float f = vkf::bfloat16_to_float(bits);
        if (std::isnan(f)) {
            ASSERT_TRUE(std::isnan(vkf::bfloat16_to_float(vkf::float_to_bfloat16(f))));
            continue;
        }
        ASSERT_EQ(vkf::float_to_bfloat16(f), bits) << "bfloat16 0x" << std::hex << b;
    }
    EXPECT_TRUE(std::isnan(vkf::bfloat16_to_float(vkf::float_to_bfloat16(std::bit_cast<float>(0x7f800001u)))));
}

TEST(HalfArrays, ConvertWholeSpans) {
    const std::vector<float> values = {0.0f, 1.0f, -2.5f, 65504.0f, 0x1p-24f};
    const std::vector<std::uint16_t> halves = vkf::floats_to_halves(values);
    EXPECT_EQ(halves, (std::vector<std::uint16_t>{0x0000, 0x3c00, 0xc100, 0x7bff, 0x0001}));
    EXPECT_EQ(vkf::halves_to_floats(halves), values);
    const std::vector<std::uint16_t> bf = vkf::floats_to_bfloat16s(values);
    EXPECT_EQ(vkf::bfloat16s_to_floats(bf)[2], -2.5f);

    std::vector<std::uint16_t> too_short(2);
    EXPECT_THROW(vkf::floats_to_halves(values, too_short), vkf::Error);
    std::vector<float> wrong(1);
    EXPECT_THROW(vkf::halves_to_floats(halves, wrong), vkf::Error);
}

}  // namespace

namespace vkf {
namespace {

TEST(Half, FirstOverflowNamesTheFirstFiniteValueThatBecameInfinite) {
    const std::vector<float> values = {1.0f, std::numeric_limits<float>::infinity(), 65504.0f, 70000.0f, -1e9f};
    const std::vector<std::uint16_t> halves = floats_to_halves(values);
    EXPECT_EQ(first_half_overflow(values, halves), std::optional<std::size_t>{3});
    EXPECT_EQ(first_half_overflow(std::span(values).first(3), std::span(halves).first(3)), std::nullopt)
        << "an infinity that was infinite already is no overflow";
}

}  // namespace
}  // namespace vkf
