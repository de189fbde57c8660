// The double-precision CPU attention reference: hand-computed cases, masking, ALiBi forms,
// GQA, per-batch key lengths, fully masked rows, slope tables, the default scale, and a naive
// cross-check over many shapes. Parameter validation, compare_to_reference and random_uniform:
// test_attention_params.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/reference/attention.hpp"
#include "host/spec/alibi.hpp"
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

std::size_t q_index(const AttentionShape& s, std::size_t b, std::size_t i, std::size_t h, std::size_t d) {
    return ((b * s.q_len + i) * s.n_head + h) * s.head_dim + d;
}

std::size_t kv_index(const AttentionShape& s, std::size_t b, std::size_t j, std::size_t h, std::size_t d) {
    return ((b * s.kv_len + j) * s.n_kv_head + h) * s.head_dim + d;
}

// The bias of (head, query position, key), or nullopt when the key is masked.
using BiasFunction = std::function<std::optional<double>(std::uint32_t head, std::int64_t position, std::int64_t key)>;

// Deliberately naive attention, independent of the library's loop structure: every score
// is formed, masked ones set to -inf, then softmax and the weighted sum, one element at a
// time.
std::vector<double> naive_attention(const AttentionShape& s, double scale, const Inputs& in,
                                    std::span<const std::uint32_t> kv_lens, const BiasFunction& bias) {
    std::vector<double> out(vkf::q_element_count(s), 0.0);
    const std::uint32_t group = s.n_head / s.n_kv_head;
    for (std::size_t b = 0; b < s.batch; ++b) {
        const std::int64_t valid = kv_lens.empty() ? s.kv_len : kv_lens[b];
        for (std::size_t h = 0; h < s.n_head; ++h) {
            const std::size_t kvh = h / group;
            for (std::size_t i = 0; i < s.q_len; ++i) {
                const std::int64_t position = valid - static_cast<std::int64_t>(s.q_len) + static_cast<std::int64_t>(i);
                std::vector<double> scores(s.kv_len, -std::numeric_limits<double>::infinity());
                double row_max = -std::numeric_limits<double>::infinity();
                for (std::size_t j = 0; j < s.kv_len; ++j) {
                    const std::optional<double> bias_value =
                        static_cast<std::int64_t>(j) < valid
                            ? bias(static_cast<std::uint32_t>(h), position, static_cast<std::int64_t>(j))
                            : std::nullopt;
                    if (!bias_value) {
                        continue;
                    }
                    double dot = 0.0;
                    for (std::size_t d = 0; d < s.head_dim; ++d) {
                        dot += static_cast<double>(in.q[q_index(s, b, i, h, d)]) *
                               static_cast<double>(in.k[kv_index(s, b, j, kvh, d)]);
                    }
                    scores[j] = scale * dot + *bias_value;
                    row_max = std::max(row_max, scores[j]);
                }
                if (row_max == -std::numeric_limits<double>::infinity()) {
                    continue;  // fully masked row: zeros
                }
                double sum = 0.0;
                for (double& score : scores) {
                    score = std::exp(score - row_max);
                    sum += score;
                }
                for (std::size_t d = 0; d < s.head_dim; ++d) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < s.kv_len; ++j) {
                        acc += scores[j] * static_cast<double>(in.v[kv_index(s, b, j, kvh, d)]);
                    }
                    out[q_index(s, b, i, h, d)] = acc / sum;
                }
            }
        }
    }
    return out;
}

// The conventions of docs/DESIGN.md written out directly.
BiasFunction design_bias(const AttentionParams& params) {
    return [params](std::uint32_t head, std::int64_t position, std::int64_t key) -> std::optional<double> {
        if (params.mask == MaskMode::Causal && key > position) {
            return std::nullopt;
        }
        const double slope = params.slopes.empty() ? vkf::alibi_slope(head, params.shape.n_head, params.max_bias)
                                                   : static_cast<double>(params.slopes[head]);
        const auto distance = static_cast<double>(key - position);
        switch (params.alibi) {
            case AlibiMode::Causal:
                return slope * distance;
            case AlibiMode::Symmetric:
                return -slope * std::abs(distance);
            case AlibiMode::FalconBf16:
                // Added to q.k before the scale, rounded to bfloat16 first.
                return static_cast<double>(
                           vkf::bfloat16_to_float(vkf::float_to_bfloat16(static_cast<float>(slope * key)))) *
                       vkf::effective_scale(params);
            case AlibiMode::Off:
                break;
        }
        return 0.0;
    };
}

void expect_close(std::span<const double> actual, std::span<const double> expected, double tolerance,
                  const std::string& what) {
    ASSERT_EQ(actual.size(), expected.size()) << what;
    for (std::size_t n = 0; n < actual.size(); ++n) {
        ASSERT_NEAR(actual[n], expected[n], tolerance) << what << " element " << n;
    }
}

// ---------------------------------------------------------------------------------------

TEST(ReferenceAttention, HandComputedSingleRow) {
    // One query (1, 2) against keys (1, 0) and (0, 1): scores 1 and 2 with scale 1.
    const AttentionParams params{
        .shape = {.batch = 1, .q_len = 1, .kv_len = 2, .n_head = 1, .n_kv_head = 1, .head_dim = 2},
        .mask = MaskMode::None,
        .alibi = AlibiMode::Off,
        .scale = 1.0f,
    };
    const std::vector<float> q = {1, 2};
    const std::vector<float> k = {1, 0, 0, 1};
    const std::vector<float> v = {1, 3, 2, -1};
    const double w0 = std::exp(1.0) / (std::exp(1.0) + std::exp(2.0));
    const double w1 = std::exp(2.0) / (std::exp(1.0) + std::exp(2.0));
    const std::vector<double> out = vkf::reference::attention(params, q, k, v);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_NEAR(out[0], w0 * 1 + w1 * 2, 1e-15);
    EXPECT_NEAR(out[1], w0 * 3 + w1 * -1, 1e-15);
    // The same by decimal literals: w0 = 1 / (1 + e) = 0.2689414213699951.
    EXPECT_NEAR(out[0], 1.7310585786300049, 1e-15);
    EXPECT_NEAR(out[1], 0.0757656854799804, 1e-15);
}

TEST(ReferenceAttention, HandComputedCausalAlibiWithCache) {
    // head_dim 1, 2 heads (slopes 2^-4 and 2^-8), q_len 2 after a 1-key cache: the query
    // rows sit at positions 1 and 2 of kv_len 3. Scale 0.5.
    const AttentionParams params{
        .shape = {.batch = 1, .q_len = 2, .kv_len = 3, .n_head = 2, .n_kv_head = 1, .head_dim = 1},
        .mask = MaskMode::Causal,
        .alibi = AlibiMode::Causal,
        .scale = 0.5f,
    };
    const std::vector<float> q = {2, -1, 1, 4};  // [i][h]
    const std::vector<float> k = {1, -2, 3};
    const std::vector<float> v = {0.5f, 2, -1};
    const double s0 = 0.0625, s1 = 0.00390625;

    // Row 0 (position 1), head 0: keys 0 and 1 with scores 0.5*2*k_j + s0*(j - 1).
    double a = std::exp(0.5 * 2 * 1 - s0), b = std::exp(0.5 * 2 * -2);
    const double r0h0 = (a * 0.5 + b * 2) / (a + b);
    // Row 0, head 1 (q = -1).
    a = std::exp(0.5 * -1 * 1 - s1), b = std::exp(0.5 * -1 * -2);
    const double r0h1 = (a * 0.5 + b * 2) / (a + b);
    // Row 1 (position 2), head 0 (q = 1): keys 0, 1, 2 with bias s0*(j - 2).
    a = std::exp(0.5 * 1 - 2 * s0), b = std::exp(0.5 * -2 - s0);
    double c = std::exp(0.5 * 3);
    const double r1h0 = (a * 0.5 + b * 2 + c * -1) / (a + b + c);
    // Row 1, head 1 (q = 4).
    a = std::exp(0.5 * 4 * 1 - 2 * s1), b = std::exp(0.5 * 4 * -2 - s1), c = std::exp(0.5 * 4 * 3);
    const double r1h1 = (a * 0.5 + b * 2 + c * -1) / (a + b + c);

    const std::vector<double> out = vkf::reference::attention(params, q, k, v);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_NEAR(out[0], r0h0, 1e-14);
    EXPECT_NEAR(out[1], r0h1, 1e-14);
    EXPECT_NEAR(out[2], r1h0, 1e-14);
    EXPECT_NEAR(out[3], r1h1, 1e-14);
}

TEST(ReferenceAttention, MatchesNaiveImplementationOverManyShapes) {
    struct Case {
        AttentionShape shape;
        MaskMode mask;
        AlibiMode alibi;
        std::vector<std::uint32_t> kv_lens;
    };
    const std::vector<Case> cases = {
        {{1, 1, 1, 1, 1, 1}, MaskMode::Causal, AlibiMode::Causal, {}},
        {{1, 7, 7, 3, 3, 5}, MaskMode::Causal, AlibiMode::Causal, {}},
        {{2, 5, 17, 4, 2, 8}, MaskMode::Causal, AlibiMode::Causal, {}},
        {{2, 13, 13, 6, 3, 16}, MaskMode::None, AlibiMode::Symmetric, {}},
        {{1, 9, 31, 12, 1, 3}, MaskMode::Causal, AlibiMode::Off, {}},
        {{3, 4, 11, 5, 5, 13}, MaskMode::Causal, AlibiMode::Causal, {11, 3, 7}},
        {{2, 6, 9, 2, 1, 9}, MaskMode::None, AlibiMode::Causal, {9, 4}},
        {{1, 20, 10, 4, 4, 7}, MaskMode::Causal, AlibiMode::Causal, {}},       // q_len > kv_len
        {{2, 1, 29, 8, 2, 64}, MaskMode::Causal, AlibiMode::Causal, {29, 1}},  // decode step
        {{1, 33, 33, 2, 2, 24}, MaskMode::None, AlibiMode::Off, {}},
    };
    std::uint64_t seed = 100;
    for (const Case& c : cases) {
        const AttentionParams params{
            .shape = c.shape,
            .mask = c.mask,
            .alibi = c.alibi,
            .max_bias = 8.0f,
            .kv_lens = c.kv_lens,
        };
        const Inputs in = random_inputs(c.shape, seed += 10);
        const std::vector<double> expected =
            naive_attention(c.shape, vkf::effective_scale(params), in, c.kv_lens, design_bias(params));
        const std::string what = "shape (" + std::to_string(c.shape.batch) + ", " + std::to_string(c.shape.q_len) +
                                 ", " + std::to_string(c.shape.kv_len) + ", " + std::to_string(c.shape.n_head) + ", " +
                                 std::to_string(c.shape.n_kv_head) + ", " + std::to_string(c.shape.head_dim) + ")";
        expect_close(reference(params, in), expected, 1e-12, what);
    }
}

TEST(ReferenceAttention, CausalMaskIgnoresFutureKeys) {
    // q_len 3 after a cache of 4: rows sit at positions 4, 5, 6 of kv_len 7.
    const AttentionShape shape{.batch = 1, .q_len = 3, .kv_len = 7, .n_head = 2, .n_kv_head = 2, .head_dim = 8};
    const AttentionParams params{.shape = shape};
    Inputs in = random_inputs(shape, 7);
    const std::vector<double> before = reference(params, in);

    // Key and value 6 are visible only to row 2 (position 6).
    for (std::size_t h = 0; h < shape.n_kv_head; ++h) {
        for (std::size_t d = 0; d < shape.head_dim; ++d) {
            in.k[kv_index(shape, 0, 6, h, d)] = 5.0f;
            in.v[kv_index(shape, 0, 6, h, d)] = -9.0f;
        }
    }
    const std::vector<double> after = reference(params, in);
    for (std::size_t i = 0; i < shape.q_len; ++i) {
        for (std::size_t h = 0; h < shape.n_head; ++h) {
            for (std::size_t d = 0; d < shape.head_dim; ++d) {
                const std::size_t n = q_index(shape, 0, i, h, d);
                if (i < 2) {
                    EXPECT_EQ(after[n], before[n]) << "row " << i << " head " << h;
                } else {
                    EXPECT_NE(after[n], before[n]) << "row " << i << " head " << h;
                }
            }
        }
    }
}

TEST(ReferenceAttention, KeysBeyondKvLensAreIgnored) {
    const AttentionShape shape{.batch = 2, .q_len = 2, .kv_len = 6, .n_head = 3, .n_kv_head = 1, .head_dim = 4};
    const std::vector<std::uint32_t> kv_lens = {4, 6};
    const AttentionParams params{.shape = shape, .mask = MaskMode::None, .kv_lens = kv_lens};
    Inputs in = random_inputs(shape, 8);
    const std::vector<double> before = reference(params, in);
    for (std::size_t j = 4; j < 6; ++j) {
        for (std::size_t d = 0; d < shape.head_dim; ++d) {
            in.k[kv_index(shape, 0, j, 0, d)] = 100.0f;
            in.v[kv_index(shape, 0, j, 0, d)] = 100.0f;
        }
    }
    EXPECT_EQ(reference(params, in), before);
}

// Causal mask with causal ALiBi, symmetric ALiBi, and BLOOM's slope * j form (computed
// here explicitly) agree: on unmasked keys the first two are equal, and the third differs
// by slope * p_i, a per-row constant that softmax removes.
TEST(ReferenceAttention, AlibiFormsAgreeUnderCausalMask) {
    const AttentionShape shape{.batch = 2, .q_len = 9, .kv_len = 14, .n_head = 6, .n_kv_head = 6, .head_dim = 16};
    const Inputs in = random_inputs(shape, 9);
    AttentionParams params{.shape = shape, .mask = MaskMode::Causal, .alibi = AlibiMode::Causal};
    const std::vector<double> causal = reference(params, in);
    params.alibi = AlibiMode::Symmetric;
    const std::vector<double> symmetric = reference(params, in);
    expect_close(symmetric, causal, 1e-13, "symmetric vs causal ALiBi");

    const BiasFunction bloom = [&](std::uint32_t head, std::int64_t position,
                                   std::int64_t key) -> std::optional<double> {
        if (key > position) {
            return std::nullopt;
        }
        return vkf::alibi_slope(head, shape.n_head, 8.0) * static_cast<double>(key);
    };
    const std::vector<double> bloom_out = naive_attention(shape, vkf::effective_scale(params), in, {}, bloom);
    expect_close(bloom_out, causal, 1e-12, "BLOOM slope*j vs causal ALiBi");

    // Without the mask the forms differ, so the test above is not vacuous.
    params.mask = MaskMode::None;
    params.alibi = AlibiMode::Causal;
    const std::vector<double> unmasked_causal = reference(params, in);
    params.alibi = AlibiMode::Symmetric;
    EXPECT_NE(reference(params, in), unmasked_causal);
}

TEST(ReferenceAttention, GroupedQueryEqualsRepeatedKvHeads) {
    for (std::uint32_t n_kv_head : {1u, 2u, 3u}) {
        const AttentionShape gqa{
            .batch = 2, .q_len = 5, .kv_len = 11, .n_head = 6, .n_kv_head = n_kv_head, .head_dim = 8};
        const Inputs in = random_inputs(gqa, 10 + n_kv_head);

        AttentionShape mha = gqa;
        mha.n_kv_head = gqa.n_head;
        Inputs repeated{.q = in.q,
                        .k = std::vector<float>(vkf::kv_element_count(mha)),
                        .v = std::vector<float>(vkf::kv_element_count(mha))};
        const std::uint32_t group = gqa.n_head / gqa.n_kv_head;
        for (std::size_t b = 0; b < gqa.batch; ++b) {
            for (std::size_t j = 0; j < gqa.kv_len; ++j) {
                for (std::size_t h = 0; h < mha.n_head; ++h) {
                    for (std::size_t d = 0; d < gqa.head_dim; ++d) {
                        repeated.k[kv_index(mha, b, j, h, d)] = in.k[kv_index(gqa, b, j, h / group, d)];
                        repeated.v[kv_index(mha, b, j, h, d)] = in.v[kv_index(gqa, b, j, h / group, d)];
                    }
                }
            }
        }
        const std::vector<double> grouped = reference(AttentionParams{.shape = gqa}, in);
        const std::vector<double> multi_head = reference(AttentionParams{.shape = mha}, repeated);
        EXPECT_EQ(grouped, multi_head) << "n_kv_head " << n_kv_head;
    }
}

// A batch with kv_lens[b] = L gives the same rows as a call whose K/V hold just those L
// keys: the query positions L - q_len + i coincide.
TEST(ReferenceAttention, KvLensEqualsTruncatedKeys) {
    const AttentionShape shape{.batch = 2, .q_len = 3, .kv_len = 10, .n_head = 4, .n_kv_head = 2, .head_dim = 12};
    const std::vector<std::uint32_t> kv_lens = {6, 10};
    const Inputs in = random_inputs(shape, 11);

    for (MaskMode mask : {MaskMode::Causal, MaskMode::None}) {
        for (AlibiMode alibi : {AlibiMode::Causal, AlibiMode::Symmetric, AlibiMode::Off}) {
            const AttentionParams params{.shape = shape, .mask = mask, .alibi = alibi, .kv_lens = kv_lens};
            const std::vector<double> batched = reference(params, in);

            for (std::uint32_t b = 0; b < shape.batch; ++b) {
                const AttentionShape single{.batch = 1,
                                            .q_len = shape.q_len,
                                            .kv_len = kv_lens[b],
                                            .n_head = shape.n_head,
                                            .n_kv_head = shape.n_kv_head,
                                            .head_dim = shape.head_dim};
                const std::size_t q_size = vkf::q_element_count(single);
                const std::size_t kv_row = std::size_t{shape.n_kv_head} * shape.head_dim;
                const std::size_t kv_begin = b * shape.kv_len * kv_row;
                const Inputs truncated{
                    .q = {in.q.begin() + static_cast<std::ptrdiff_t>(b * q_size),
                          in.q.begin() + static_cast<std::ptrdiff_t>((b + 1) * q_size)},
                    .k = {in.k.begin() + static_cast<std::ptrdiff_t>(kv_begin),
                          in.k.begin() + static_cast<std::ptrdiff_t>(kv_begin + kv_lens[b] * kv_row)},
                    .v = {in.v.begin() + static_cast<std::ptrdiff_t>(kv_begin),
                          in.v.begin() + static_cast<std::ptrdiff_t>(kv_begin + kv_lens[b] * kv_row)},
                };
                const std::vector<double> alone =
                    reference(AttentionParams{.shape = single, .mask = mask, .alibi = alibi}, truncated);
                const std::vector<double> rows(batched.begin() + static_cast<std::ptrdiff_t>(b * q_size),
                                               batched.begin() + static_cast<std::ptrdiff_t>((b + 1) * q_size));
                EXPECT_EQ(rows, alone) << "batch " << b << " mask " << static_cast<int>(mask) << " alibi "
                                       << static_cast<int>(alibi);
            }
        }
    }
}

TEST(ReferenceAttention, FullyMaskedRowsAreZero) {
    // Batch 0 has 2 valid keys for 4 query rows: positions -2, -1, 0, 1, so under the
    // causal mask rows 0 and 1 see no key. Batch 1 has no valid key at all.
    const AttentionShape shape{.batch = 2, .q_len = 4, .kv_len = 5, .n_head = 2, .n_kv_head = 1, .head_dim = 3};
    const std::vector<std::uint32_t> kv_lens = {2, 0};
    const Inputs in = random_inputs(shape, 12);
    for (MaskMode mask : {MaskMode::Causal, MaskMode::None}) {
        const std::vector<double> out =
            reference(AttentionParams{.shape = shape, .mask = mask, .kv_lens = kv_lens}, in);
        for (std::size_t b = 0; b < shape.batch; ++b) {
            for (std::size_t i = 0; i < shape.q_len; ++i) {
                const bool masked = b == 1 || (mask == MaskMode::Causal && i < 2);
                for (std::size_t h = 0; h < shape.n_head; ++h) {
                    for (std::size_t d = 0; d < shape.head_dim; ++d) {
                        const double value = out[q_index(shape, b, i, h, d)];
                        ASSERT_TRUE(std::isfinite(value));
                        if (masked) {
                            EXPECT_EQ(value, 0.0) << "batch " << b << " row " << i;
                        } else {
                            EXPECT_NE(value, 0.0) << "batch " << b << " row " << i;
                        }
                    }
                }
            }
        }
    }
}

TEST(ReferenceAttention, ExplicitSlopeTable) {
    const AttentionShape shape{.batch = 1, .q_len = 6, .kv_len = 6, .n_head = 5, .n_kv_head = 5, .head_dim = 4};
    const Inputs in = random_inputs(shape, 13);
    // The formula's own slopes given as a table: same result up to float rounding.
    const std::vector<float> formula = vkf::alibi_slopes(5);
    const std::vector<double> from_formula = reference(AttentionParams{.shape = shape}, in);
    const std::vector<double> from_table = reference(AttentionParams{.shape = shape, .slopes = formula}, in);
    expect_close(from_table, from_formula, 1e-6, "slope table equal to the formula");

    // Learned slopes, checked against the naive implementation.
    const std::vector<float> learned = {0.9f, 0.01f, 0.3f, 2.0f, 0.05f};
    const AttentionParams params{.shape = shape, .slopes = learned};
    const std::vector<double> expected =
        naive_attention(shape, vkf::effective_scale(params), in, {}, design_bias(params));
    expect_close(reference(params, in), expected, 1e-12, "learned slopes");
}

TEST(ReferenceAttention, MaxBiasChangesSlopes) {
    const AttentionShape shape{.batch = 1, .q_len = 8, .kv_len = 8, .n_head = 4, .n_kv_head = 4, .head_dim = 4};
    const Inputs in = random_inputs(shape, 14);
    const AttentionParams params{.shape = shape, .max_bias = 16.0f};
    const std::vector<double> expected =
        naive_attention(shape, vkf::effective_scale(params), in, {}, design_bias(params));
    expect_close(reference(params, in), expected, 1e-12, "max_bias 16");
}

TEST(ReferenceAttention, ScaleDefaultsToInverseSqrtHeadDim) {
    const AttentionShape shape{.batch = 1, .q_len = 1, .kv_len = 1, .n_head = 1, .n_kv_head = 1, .head_dim = 64};
    EXPECT_EQ(vkf::effective_scale(AttentionParams{.shape = shape}), 0.125f);
    EXPECT_EQ(vkf::effective_scale(AttentionParams{.shape = shape, .scale = 0.3f}), 0.3f);

    const AttentionShape small{.batch = 1, .q_len = 3, .kv_len = 3, .n_head = 1, .n_kv_head = 1, .head_dim = 4};
    const Inputs in = random_inputs(small, 15);
    const AttentionParams explicit_half{.shape = small, .scale = 0.5f};
    EXPECT_EQ(reference(AttentionParams{.shape = small}, in), reference(explicit_half, in));
    const AttentionParams other{.shape = small, .scale = 2.0f};
    const std::vector<double> expected = naive_attention(small, 2.0, in, {}, design_bias(other));
    expect_close(reference(other, in), expected, 1e-12, "scale 2");
}

}  // namespace
