// Attention parameter validation and the reference's refusal of wrong array sizes, with
// errors that name the problem; compare_to_reference's statistics and random_uniform.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "host/reference/attention.hpp"
#include "host/spec/attention_params.hpp"
#include "host/util/compare.hpp"
#include "host/util/random.hpp"
#include "tests/reference/attention_inputs.hpp"

namespace {

using vkf::AlibiMode;
using vkf::AttentionParams;
using vkf::AttentionShape;
using vkf::MaskMode;

using vkf::test::Inputs;
using vkf::test::random_inputs;
using vkf::test::reference;

void expect_error_mentions(const std::function<void()>& call, const std::string& fragment) {
    try {
        call();
        ADD_FAILURE() << "no vkf::Error thrown; expected one mentioning '" << fragment << "'";
    } catch (const vkf::Error& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
}

constexpr AttentionShape kValidShape{.batch = 2, .q_len = 3, .kv_len = 5, .n_head = 4, .n_kv_head = 2, .head_dim = 8};

TEST(AttentionParamsValidate, AcceptsValidParams) {
    EXPECT_NO_THROW(vkf::validate(AttentionParams{.shape = kValidShape}));
    const std::vector<std::uint32_t> kv_lens = {0, 5};
    const std::vector<float> slopes = {1, 2, 3, 4};
    EXPECT_NO_THROW(vkf::validate(AttentionParams{.shape = kValidShape, .slopes = slopes, .kv_lens = kv_lens}));
    AttentionShape longer_queries = kValidShape;
    longer_queries.q_len = 9;  // more query rows than keys is allowed
    EXPECT_NO_THROW(vkf::validate(AttentionParams{.shape = longer_queries}));
}

TEST(AttentionParamsValidate, ZeroDimensions) {
    const std::vector<std::pair<std::uint32_t AttentionShape::*, std::string>> fields = {
        {&AttentionShape::batch, "batch"},         {&AttentionShape::q_len, "q_len"},
        {&AttentionShape::kv_len, "kv_len"},       {&AttentionShape::n_head, "n_head"},
        {&AttentionShape::n_kv_head, "n_kv_head"}, {&AttentionShape::head_dim, "head_dim"},
    };
    for (const auto& [field, name] : fields) {
        AttentionShape shape = kValidShape;
        shape.*field = 0;
        expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = shape}); }, name + " must not be 0");
    }
}

TEST(AttentionParamsValidate, HeadCountsAndTables) {
    AttentionShape shape = kValidShape;
    shape.n_kv_head = 3;
    expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = shape}); },
                          "n_head 4 is not a multiple of n_kv_head 3");

    const std::vector<float> three_slopes = {1, 2, 3};
    expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = kValidShape, .slopes = three_slopes}); },
                          "slope table has 3 entries but n_head is 4");
    const std::vector<float> nan_slope = {1, 2, std::numeric_limits<float>::quiet_NaN(), 4};
    expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = kValidShape, .slopes = nan_slope}); },
                          "slopes[2]");

    const std::vector<std::uint32_t> one_len = {5};
    expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = kValidShape, .kv_lens = one_len}); },
                          "kv_lens has 1 entries but batch is 2");
    const std::vector<std::uint32_t> too_long = {5, 6};
    expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = kValidShape, .kv_lens = too_long}); },
                          "kv_lens[1] = 6 exceeds kv_len 5");
}

TEST(AttentionParamsValidate, ScalarsAndEnums) {
    const float inf = std::numeric_limits<float>::infinity();
    expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = kValidShape, .scale = inf}); }, "scale");
    expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = kValidShape, .max_bias = inf}); }, "max_bias");
    expect_error_mentions(
        [&] { vkf::validate(AttentionParams{.shape = kValidShape, .mask = static_cast<MaskMode>(7)}); }, "mask mode 7");
    expect_error_mentions(
        [&] { vkf::validate(AttentionParams{.shape = kValidShape, .alibi = static_cast<AlibiMode>(4)}); },
        "ALiBi mode 4");
}

TEST(AttentionParamsValidate, ElementCountOverflow) {
    const AttentionShape huge{.batch = 0xffffffffu,
                              .q_len = 0xffffffffu,
                              .kv_len = 1,
                              .n_head = 0xffffffffu,
                              .n_kv_head = 1,
                              .head_dim = 0xffffffffu};
    expect_error_mentions([&] { vkf::validate(AttentionParams{.shape = huge}); }, "overflows");
}

TEST(ReferenceAttention, RejectsWrongArraySizes) {
    const Inputs in = random_inputs(kValidShape, 16);
    const AttentionParams params{.shape = kValidShape};
    std::vector<float> short_q(in.q.begin(), in.q.end() - 1);
    expect_error_mentions([&] { vkf::reference::attention(params, short_q, in.k, in.v); },
                          "Q has 191 elements but its shape [2, 3, 4, 8] needs 192");
    std::vector<float> long_k = in.k;
    long_k.push_back(0);
    expect_error_mentions([&] { vkf::reference::attention(params, in.q, long_k, in.v); },
                          "K has 161 elements but its shape [2, 5, 2, 8] needs 160");
    expect_error_mentions([&] { vkf::reference::attention(params, in.q, in.k, {}); }, "V has 0 elements");
    AttentionShape bad = kValidShape;
    bad.n_kv_head = 3;
    expect_error_mentions([&] { vkf::reference::attention(AttentionParams{.shape = bad}, in.q, in.k, in.v); },
                          "not a multiple");
}

// ---------------------------------------------------------------------------------------

TEST(CompareToReference, Statistics) {
    const std::vector<double> ref = {1.0, -2.0, 0.5, 4.0};
    const std::vector<float> out = {1.0f, -2.5f, 0.5f, 4.0f};
    const vkf::ErrorStats stats = vkf::compare_to_reference(out, ref);
    EXPECT_DOUBLE_EQ(stats.max_abs_err, 0.5);
    EXPECT_DOUBLE_EQ(stats.max_abs_ref, 4.0);
    EXPECT_DOUBLE_EQ(stats.max_rel, 0.125);
    EXPECT_DOUBLE_EQ(stats.rel_l2, 0.5 / std::sqrt(1.0 + 4.0 + 0.25 + 16.0));
    EXPECT_EQ(stats.first_nonfinite, SIZE_MAX);
    EXPECT_NE(vkf::describe(stats).find("max_rel 0.125"), std::string::npos);
}

TEST(CompareToReference, NonFiniteOutputFailsEveryTolerance) {
    const std::vector<double> ref = {1.0, 2.0, 3.0};
    const std::vector<float> out = {1.0f, std::numeric_limits<float>::quiet_NaN(),
                                    std::numeric_limits<float>::infinity()};
    const vkf::ErrorStats stats = vkf::compare_to_reference(out, ref);
    EXPECT_EQ(stats.first_nonfinite, 1u);
    EXPECT_FALSE(stats.max_rel < 1.0);
    EXPECT_FALSE(stats.rel_l2 < 1.0);
    EXPECT_FALSE(stats.max_abs_err < 1.0);
    EXPECT_NE(vkf::describe(stats).find("index 1"), std::string::npos);
}

TEST(CompareToReference, ZeroReference) {
    const std::vector<double> ref = {0.0, 0.0};
    EXPECT_EQ(vkf::compare_to_reference(std::vector<float>{0.0f, 0.0f}, ref).max_rel, 0.0);
    EXPECT_TRUE(std::isinf(vkf::compare_to_reference(std::vector<float>{0.0f, 1e-3f}, ref).rel_l2));
}

TEST(CompareToReference, SizeMismatch) {
    const std::vector<double> ref = {1.0, 2.0};
    expect_error_mentions([&] { vkf::compare_to_reference(std::vector<float>{1.0f}, ref); },
                          "output has 1 elements but the reference has 2");
}

TEST(CompareToReference, FloatRoundedReferenceIsWithinFp32Tolerance) {
    const AttentionShape shape{.batch = 1, .q_len = 16, .kv_len = 16, .n_head = 2, .n_kv_head = 2, .head_dim = 32};
    const std::vector<double> ref = reference(AttentionParams{.shape = shape}, random_inputs(shape, 17));
    const std::vector<float> rounded(ref.begin(), ref.end());
    const vkf::ErrorStats stats = vkf::compare_to_reference(rounded, ref);
    EXPECT_LT(stats.max_rel, 1e-7);
    EXPECT_LT(stats.rel_l2, 1e-7);
    EXPECT_GT(stats.max_abs_ref, 0.0);
}

TEST(RandomUniform, SeededAndInRange) {
    const std::vector<float> a = vkf::random_uniform(1000, 42, -3.0f, 5.0f);
    EXPECT_EQ(a, vkf::random_uniform(1000, 42, -3.0f, 5.0f));
    EXPECT_NE(a, vkf::random_uniform(1000, 43, -3.0f, 5.0f));
    float lo = a[0], hi = a[0];
    for (float x : a) {
        EXPECT_GE(x, -3.0f);
        EXPECT_LT(x, 5.0f);
        lo = std::min(lo, x);
        hi = std::max(hi, x);
    }
    EXPECT_LT(lo, -2.5f);  // spread over the range, not constant
    EXPECT_GT(hi, 4.5f);
}

}  // namespace
