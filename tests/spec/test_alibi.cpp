// ALiBi slopes against values worked out by hand (docs/DESIGN.md's formula, max bias 8 unless
// stated), MPT's slope order, and the bias forms.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/spec/alibi.hpp"

namespace {

// Slopes for 8 heads: 2^-1 ... 2^-8.
const std::vector<double> kSlopes8 = {
    0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
};

// 12 heads: c = 8, the 8-head slopes, then m1 = 2^-0.5 to the powers 1, 3, 5, 7.
const std::vector<double> kSlopes12 = {
    0.5,
    0.25,
    0.125,
    0.0625,
    0.03125,
    0.015625,
    0.0078125,
    0.00390625,
    0.70710678118654752,  // 2^-0.5
    0.35355339059327376,  // 2^-1.5
    0.17677669529663688,  // 2^-2.5
    0.08838834764831844,  // 2^-3.5
};

// 16 heads: 2^-0.5, 2^-1, ..., 2^-8.
const std::vector<double> kSlopes16 = {
    0.70710678118654752, 0.5,       0.35355339059327376, 0.25,       0.17677669529663688, 0.125,
    0.08838834764831844, 0.0625,    0.04419417382415922, 0.03125,    0.02209708691207961, 0.015625,
    0.01104854345603981, 0.0078125, 0.00552427172801990, 0.00390625,
};

// The 2^-k/4 for odd k (m1 = 2^-0.25 to the powers 1, 3, 5, ...): the extra heads
// beyond c = 16 take them in order.
const std::vector<double> kOddQuarterPowers = {
    0.84089641525371454,  // 2^-0.25
    0.59460355750136053,  // 2^-0.75
    0.42044820762685727,  // 2^-1.25
    0.29730177875068027,  // 2^-1.75
    0.21022410381342864,  // 2^-2.25
    0.14865088937534013,  // 2^-2.75
    0.10511205190671432,  // 2^-3.25
    0.07432544468767007,  // 2^-3.75
    0.05255602595335716,  // 2^-4.25
    0.03716272234383503,  // 2^-4.75
    0.02627801297667858,  // 2^-5.25
    0.01858136117191752,  // 2^-5.75
    0.01313900648833929,  // 2^-6.25
    0.00929068058595876,  // 2^-6.75
};

std::vector<double> concat(std::vector<double> a, const std::vector<double>& b, std::size_t n) {
    a.insert(a.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    return a;
}

void expect_slopes(std::uint32_t n_head, double max_bias, const std::vector<double>& expected) {
    ASSERT_EQ(expected.size(), n_head);
    const std::vector<float> table = vkf::alibi_slopes(n_head, max_bias);
    ASSERT_EQ(table.size(), n_head);
    for (std::uint32_t h = 0; h < n_head; ++h) {
        // Relative 1e-15: the literals carry 17 significant digits, exp2 is accurate to
        // an ulp or so.
        EXPECT_NEAR(vkf::alibi_slope(h, n_head, max_bias), expected[h], expected[h] * 1e-15)
            << "n_head " << n_head << " head " << h;
        EXPECT_FLOAT_EQ(table[h], static_cast<float>(expected[h])) << "n_head " << n_head << " head " << h;
    }
}

TEST(AlibiSlopes, PowerOfTwoHeadCounts) {
    expect_slopes(8, 8.0, kSlopes8);
    expect_slopes(16, 8.0, kSlopes16);
}

TEST(AlibiSlopes, NonPowerOfTwoHeadCounts) {
    expect_slopes(12, 8.0, kSlopes12);
    expect_slopes(20, 8.0, concat(kSlopes16, kOddQuarterPowers, 4));
    expect_slopes(30, 8.0, concat(kSlopes16, kOddQuarterPowers, 14));
}

TEST(AlibiSlopes, SmallHeadCounts) {
    expect_slopes(1, 8.0, {0.00390625});                // 2^-8
    expect_slopes(2, 8.0, {0.0625, 0.00390625});        // 2^-4, 2^-8
    expect_slopes(3, 8.0, {0.0625, 0.00390625, 0.25});  // c = 2, then 2^-2
}

TEST(AlibiSlopes, OtherMaxBias) {
    // max_bias 16 (MPT's alibi_bias_max in some configs), 8 heads: 2^-2, 2^-4, ..., 2^-16.
    expect_slopes(
        8, 16.0,
        {0.25, 0.0625, 0.015625, 0.00390625, 0.0009765625, 0.000244140625, 0.00006103515625, 0.0000152587890625});
    // max_bias 4, 4 heads: 2^-1 ... 2^-4.
    expect_slopes(4, 4.0, {0.5, 0.25, 0.125, 0.0625});
    // max_bias 4, 6 heads: c = 4, then m1 = 2^-0.5 to the powers 1 and 3.
    expect_slopes(6, 4.0, {0.5, 0.25, 0.125, 0.0625, 0.70710678118654752, 0.35355339059327376});
}

TEST(AlibiSlopes, MptOrderFor12Heads) {
    // N = 16, s_k = 2^(-k/2); s[1::2] = 2^-1 ... 2^-8, then s[::2] = 2^-0.5, 2^-1.5, ...
    const std::vector<double> expected = {
        0.5,
        0.25,
        0.125,
        0.0625,
        0.03125,
        0.015625,
        0.0078125,
        0.00390625,
        0.70710678118654752,
        0.35355339059327376,
        0.17677669529663688,
        0.08838834764831844,
    };
    const std::vector<float> mpt = vkf::mpt_alibi_slopes(12);
    ASSERT_EQ(mpt.size(), 12u);
    for (std::size_t h = 0; h < 12; ++h) {
        EXPECT_FLOAT_EQ(mpt[h], static_cast<float>(expected[h])) << "head " << h;
    }
}

TEST(AlibiSlopes, MptWithMaxBias16) {
    // N = 8 = n_head: s_k = 2^(-2k).
    const std::vector<float> mpt8 = vkf::mpt_alibi_slopes(8, 16.0);
    const std::vector<float> expected8 = {0.25f,         0.0625f,         0.015625f,         0.00390625f,
                                          0.0009765625f, 0.000244140625f, 0.00006103515625f, 0.0000152587890625f};
    EXPECT_EQ(mpt8, expected8);
    // 12 heads, N = 16: s_k = 2^-k; s[1::2] = 2^-2, 2^-4, ..., 2^-16, then 2^-1, 2^-3, 2^-5, 2^-7.
    const std::vector<float> mpt12 = vkf::mpt_alibi_slopes(12, 16.0);
    const std::vector<float> expected12 = {0.25f,         0.0625f,         0.015625f,         0.00390625f,
                                           0.0009765625f, 0.000244140625f, 0.00006103515625f, 0.0000152587890625f,
                                           0.5f,          0.125f,          0.03125f,          0.0078125f};
    EXPECT_EQ(mpt12, expected12);
}

// MPT's gen_slopes looks different from the paper's construction, but s[1::2] are the
// slopes for N/2 heads and s[::2] the odd powers of m1, so both give the same table.
TEST(AlibiSlopes, MptOrderEqualsPaperOrder) {
    for (double max_bias : {8.0, 16.0, 5.5}) {
        for (std::uint32_t n = 1; n <= 96; ++n) {
            const std::vector<float> mpt = vkf::mpt_alibi_slopes(n, max_bias);
            const std::vector<float> paper = vkf::alibi_slopes(n, max_bias);
            ASSERT_EQ(mpt.size(), n);
            for (std::uint32_t h = 0; h < n; ++h) {
                EXPECT_FLOAT_EQ(mpt[h], paper[h]) << "n_head " << n << " head " << h << " max_bias " << max_bias;
            }
        }
    }
}

TEST(AlibiPow2Floor, Values) {
    EXPECT_EQ(vkf::alibi_pow2_floor(1), 1u);
    EXPECT_EQ(vkf::alibi_pow2_floor(2), 2u);
    EXPECT_EQ(vkf::alibi_pow2_floor(3), 2u);
    EXPECT_EQ(vkf::alibi_pow2_floor(12), 8u);
    EXPECT_EQ(vkf::alibi_pow2_floor(16), 16u);
    EXPECT_EQ(vkf::alibi_pow2_floor(30), 16u);
    EXPECT_EQ(vkf::alibi_pow2_floor(71), 64u);
    EXPECT_EQ(vkf::alibi_pow2_floor(0xffffffffu), 0x80000000u);
}

void expect_error_mentions(const std::function<void()>& call, const std::string& fragment) {
    try {
        call();
        ADD_FAILURE() << "no vkf::Error thrown; expected one mentioning '" << fragment << "'";
    } catch (const vkf::Error& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
}

TEST(AlibiErrors, ZeroHeadsAndHeadOutOfRange) {
    expect_error_mentions([] { vkf::alibi_pow2_floor(0); }, "n_head");
    expect_error_mentions([] { vkf::alibi_slope(0, 0, 8.0); }, "n_head");
    expect_error_mentions([] { vkf::alibi_slopes(0); }, "n_head");
    expect_error_mentions([] { vkf::mpt_alibi_slopes(0); }, "n_head");
    expect_error_mentions([] { vkf::alibi_slope(12, 12, 8.0); }, "head 12");
}

TEST(AlibiBias, Forms) {
    using vkf::AlibiMode;
    EXPECT_DOUBLE_EQ(vkf::alibi_bias(AlibiMode::Causal, 0.5, 7, 3), -2.0);
    EXPECT_DOUBLE_EQ(vkf::alibi_bias(AlibiMode::Causal, 0.5, 7, 7), 0.0);
    EXPECT_DOUBLE_EQ(vkf::alibi_bias(AlibiMode::Causal, 0.25, 2, 6), 1.0);  // masked in practice
    EXPECT_DOUBLE_EQ(vkf::alibi_bias(AlibiMode::Symmetric, 0.5, 7, 3), -2.0);
    EXPECT_DOUBLE_EQ(vkf::alibi_bias(AlibiMode::Symmetric, 0.5, 3, 7), -2.0);
    EXPECT_DOUBLE_EQ(vkf::alibi_bias(AlibiMode::Symmetric, 0.125, -2, 6), -1.0);
    EXPECT_DOUBLE_EQ(vkf::alibi_bias(AlibiMode::Off, 0.5, 7, 3), 0.0);
}

TEST(AlibiEnums, ValuesMatchTheShaderInterface) {
    EXPECT_EQ(static_cast<std::uint32_t>(vkf::AlibiMode::Off), 0u);
    EXPECT_EQ(static_cast<std::uint32_t>(vkf::AlibiMode::Causal), 1u);
    EXPECT_EQ(static_cast<std::uint32_t>(vkf::AlibiMode::Symmetric), 2u);
    EXPECT_EQ(static_cast<std::uint32_t>(vkf::MaskMode::None), 0u);
    EXPECT_EQ(static_cast<std::uint32_t>(vkf::MaskMode::Causal), 1u);
}

}  // namespace
