// Token sampling: greedy argmax and its tie rule, top-k / top-p truncation, seeded
// determinism, empirical frequencies against softmax(logits / T), and the errors for bad
// parameters and non-finite logits.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/sample/sampler.hpp"
#include "tests/support/test_support.hpp"

namespace {

using vkf::Sampler;
using vkf::SamplingParams;

// softmax(logits / t) in double.
std::vector<double> softmax(const std::vector<float>& logits, double t) {
    const double max_logit = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double sum = 0.0;
    for (std::size_t i = 0; i < logits.size(); ++i) {
        p[i] = std::exp((logits[i] - max_logit) / t);
        sum += p[i];
    }
    for (double& v : p) {
        v /= sum;
    }
    return p;
}

std::vector<float> spread_logits(std::size_t n) {
    // Distinct, unsorted, not monotone in the id.
    std::vector<float> logits(n);
    for (std::size_t i = 0; i < n; ++i) {
        logits[i] = static_cast<float>(std::sin(1.7 * static_cast<double>(i) + 0.3) * 2.5);
    }
    return logits;
}

std::vector<std::size_t> counts(Sampler& sampler, const std::vector<float>& logits, int draws) {
    std::vector<std::size_t> count(logits.size());
    for (int d = 0; d < draws; ++d) {
        const std::uint32_t id = sampler.sample(logits);
        EXPECT_LT(id, logits.size());
        if (id < logits.size()) {
            ++count[id];
        }
    }
    return count;
}

TEST(Sampling, GreedyIsArgmaxWithTiesToLowestId) {
    Sampler greedy(SamplingParams{});
    EXPECT_EQ(greedy.sample(std::vector<float>{0.5f, 3.0f, -1.0f, 2.0f}), 1u);
    EXPECT_EQ(greedy.sample(std::vector<float>{1.0f, 7.0f, 2.0f, 7.0f, 7.0f}), 1u);
    EXPECT_EQ(greedy.sample(std::vector<float>{4.0f, 4.0f}), 0u);
    EXPECT_EQ(greedy.sample(std::vector<float>{-3.0f}), 0u);
    EXPECT_EQ(greedy.sample(std::vector<float>{-5.0f, -1.0f, -1.0f}), 1u);
    const std::vector<float> logits = spread_logits(1000);
    const auto expected = static_cast<std::uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(greedy.sample(logits), expected);
}

TEST(Sampling, TopKOneAndTinyTopPGiveTheArgmaxAtAnyTemperature) {
    std::vector<float> logits = spread_logits(257);
    logits[100] = 10.0f;  // the argmax, tied with a later id
    logits[200] = 10.0f;
    for (float t : {0.01f, 0.7f, 1.0f, 5.0f, 1000.0f}) {
        Sampler top_k(SamplingParams{.temperature = t, .top_k = 1, .seed = 7});
        Sampler top_p(SamplingParams{.temperature = t, .top_p = 1e-6f, .seed = 7});
        for (int i = 0; i < 50; ++i) {
            EXPECT_EQ(top_k.sample(logits), 100u) << "temperature " << t;
            EXPECT_EQ(top_p.sample(logits), 100u) << "temperature " << t;
        }
    }
}

TEST(Sampling, SameSeedSameSequenceDifferentSeedsDiffer) {
    const std::vector<float> logits = spread_logits(50);
    for (SamplingParams params : {SamplingParams{.temperature = 1.0f}, SamplingParams{.temperature = 0.8f, .top_k = 20},
                                  SamplingParams{.temperature = 1.3f, .top_p = 0.9f},
                                  SamplingParams{.temperature = 1.0f, .top_k = 30, .top_p = 0.95f}}) {
        std::vector<std::vector<std::uint32_t>> runs;
        for (std::uint64_t seed : {1ull, 1ull, 2ull, 0xDEADBEEFull}) {
            params.seed = seed;
            Sampler sampler(params);
            std::vector<std::uint32_t> sequence;
            for (int i = 0; i < 64; ++i) {
                sequence.push_back(sampler.sample(logits));
            }
            runs.push_back(sequence);
        }
        EXPECT_EQ(runs[0], runs[1]);
        EXPECT_NE(runs[0], runs[2]);
        EXPECT_NE(runs[0], runs[3]);
        EXPECT_NE(runs[2], runs[3]);
    }
}

TEST(Sampling, FixedSeedSequenceIsPinned) {
    // The generator is our own splitmix64, so this sequence must never change across
    // platforms or compilers; a change here breaks reproducibility of recorded runs.
    Sampler sampler(SamplingParams{.temperature = 1.0f, .seed = 42});
    const std::vector<float> uniform(1000, 0.0f);  // every id equally likely: id = floor(u * 1000)
    std::vector<std::uint32_t> got;
    for (int i = 0; i < 8; ++i) {
        got.push_back(sampler.sample(uniform));
    }
    // splitmix64 from state 42: first output 0xBDD732262FEB6E95.
    const double u0 = static_cast<double>(0xBDD732262FEB6E95ull >> 11) * 0x1.0p-53;
    EXPECT_EQ(got[0], static_cast<std::uint32_t>(u0 * 1000.0));
    const std::set<std::uint32_t> distinct(got.begin(), got.end());
    EXPECT_GE(distinct.size(), 6u);
}

TEST(Sampling, FrequenciesMatchSoftmax) {
    const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.0f, 2.2f};
    constexpr int kDraws = 40000;
    for (float t : {0.5f, 1.0f, 2.0f}) {
        Sampler sampler(SamplingParams{.temperature = t, .seed = 12345});
        const std::vector<std::size_t> count = counts(sampler, logits, kDraws);
        const std::vector<double> p = softmax(logits, t);
        for (std::size_t i = 0; i < logits.size(); ++i) {
            const double freq = static_cast<double>(count[i]) / kDraws;
            // 5 standard deviations of a binomial frequency (plus a floor): deterministic for the seed.
            const double tolerance = 5.0 * std::sqrt(p[i] * (1.0 - p[i]) / kDraws) + 1e-3;
            EXPECT_NEAR(freq, p[i], tolerance) << "id " << i << ", temperature " << t;
        }
    }
}

TEST(Sampling, TopKFrequenciesAreRenormalizedSoftmaxOfTheKBest) {
    const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.0f, 2.2f};
    constexpr int kDraws = 40000;
    Sampler sampler(SamplingParams{.temperature = 1.0f, .top_k = 3, .seed = 99});
    const std::vector<std::size_t> count = counts(sampler, logits, kDraws);
    // The 3 best: ids 6, 1, 4.
    const std::vector<float> best = {logits[6], logits[1], logits[4]};
    const std::vector<double> p = softmax(best, 1.0);
    const std::size_t ids[] = {6, 1, 4};
    for (std::size_t r = 0; r < 3; ++r) {
        const double freq = static_cast<double>(count[ids[r]]) / kDraws;
        EXPECT_NEAR(freq, p[r], 5.0 * std::sqrt(p[r] * (1.0 - p[r]) / kDraws) + 1e-3) << "id " << ids[r];
    }
    EXPECT_EQ(count[0] + count[2] + count[3] + count[5], 0u);
}

TEST(Sampling, TopKNeverLeavesTheKBest) {
    const std::vector<float> logits = spread_logits(500);
    std::vector<std::uint32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return logits[a] > logits[b]; });
    for (std::uint32_t k : {2u, 5u, 17u, 499u}) {
        const std::set<std::uint32_t> best(order.begin(), order.begin() + k);
        // A high temperature flattens the distribution, so every survivor is likely to show up.
        Sampler sampler(SamplingParams{.temperature = 50.0f, .top_k = k, .seed = k});
        std::set<std::uint32_t> seen;
        for (int i = 0; i < 3000; ++i) {
            const std::uint32_t id = sampler.sample(logits);
            ASSERT_TRUE(best.count(id)) << "id " << id << " is not among the " << k << " best";
            seen.insert(id);
        }
        if (k <= 17) {
            EXPECT_EQ(seen.size(), k);
        }
    }
    // Ties at the boundary go to the lower ids.
    const std::vector<float> tied = {1.0f, 3.0f, 1.0f, 1.0f, 3.0f};
    Sampler sampler(SamplingParams{.temperature = 1.0f, .top_k = 3, .seed = 5});
    for (int i = 0; i < 500; ++i) {
        const std::uint32_t id = sampler.sample(tied);
        EXPECT_TRUE(id == 0 || id == 1 || id == 4) << id;
    }
}

TEST(Sampling, TopPKeepsTheSmallestPrefixReachingP) {
    // Probabilities at T = 1 (logits are log-probabilities): 0.5, 0.25, 0.15, 0.1 for ids 2, 0, 3, 1.
    const std::vector<float> logits = {std::log(0.25f), std::log(0.1f), std::log(0.5f), std::log(0.15f)};
    const struct {
        float top_p;
        std::set<std::uint32_t> allowed;
    } cases[] = {
        {0.3f, {2}},           // 0.5 reaches 0.3
        {0.5f, {2, 0}},        // 0.5 reaches 0.5 unless float rounding of the logits falls short
        {0.6f, {2, 0}},        // 0.75 is the first prefix mass >= 0.6
        {0.75f, {2, 0, 3}},    // 0.75 may fall just short in float; see below
        {0.8f, {2, 0, 3}},     // 0.9
        {0.95f, {2, 0, 3, 1}}  // needs everything
    };
    for (const auto& c : cases) {
        Sampler sampler(SamplingParams{.temperature = 1.0f, .top_p = c.top_p, .seed = 3});
        std::set<std::uint32_t> seen;
        for (int i = 0; i < 4000; ++i) {
            seen.insert(sampler.sample(logits));
        }
        for (std::uint32_t id : seen) {
            EXPECT_TRUE(c.allowed.count(id)) << "top_p " << c.top_p << " sampled id " << id;
        }
        if (c.top_p != 0.75f && c.top_p != 0.5f) {  // boundary cases: the prefix depends on rounding
            EXPECT_EQ(seen, c.allowed) << "top_p " << c.top_p;
        }
    }
    // Frequencies inside the nucleus are renormalized: top_p 0.8 keeps 0.5, 0.25, 0.15.
    Sampler sampler(SamplingParams{.temperature = 1.0f, .top_p = 0.8f, .seed = 11});
    constexpr int kDraws = 30000;
    const std::vector<std::size_t> count = counts(sampler, logits, kDraws);
    const double expected[] = {0.25 / 0.9, 0.0, 0.5 / 0.9, 0.15 / 0.9};
    for (std::size_t i = 0; i < 4; ++i) {
        const double freq = static_cast<double>(count[i]) / kDraws;
        EXPECT_NEAR(freq, expected[i], 5.0 * std::sqrt(expected[i] * (1.0 - expected[i]) / kDraws) + 1e-3) << i;
    }
}

TEST(Sampling, TopPAppliesToTheTopKSurvivors) {
    // top_k 2 keeps ids 2 (0.5) and 0 (0.25): renormalized 2/3 and 1/3; top_p 0.6 then keeps id 2 alone.
    const std::vector<float> logits = {std::log(0.25f), std::log(0.1f), std::log(0.5f), std::log(0.15f)};
    Sampler sampler(SamplingParams{.temperature = 1.0f, .top_k = 2, .top_p = 0.6f, .seed = 1});
    for (int i = 0; i < 500; ++i) {
        EXPECT_EQ(sampler.sample(logits), 2u);
    }
    Sampler wider(SamplingParams{.temperature = 1.0f, .top_k = 2, .top_p = 0.7f, .seed = 1});
    std::set<std::uint32_t> seen;
    for (int i = 0; i < 500; ++i) {
        seen.insert(wider.sample(logits));
    }
    EXPECT_EQ(seen, (std::set<std::uint32_t>{0, 2}));
}

TEST(Sampling, BadParametersThrowNamingTheField) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (float t : {-1.0f, -0.0001f, nan, inf}) {
        const std::string m = vkf::test::error_message([&] { Sampler s(SamplingParams{.temperature = t}); });
        EXPECT_NE(m.find("temperature"), std::string::npos) << m;
    }
    for (float p : {0.0f, -0.5f, 1.0001f, 2.0f, nan, inf}) {
        const std::string m =
            vkf::test::error_message([&] { vkf::validate(SamplingParams{.temperature = 1.0f, .top_p = p}); });
        EXPECT_NE(m.find("top_p"), std::string::npos) << m;
    }
    EXPECT_NO_THROW(vkf::validate(SamplingParams{.temperature = 0.0f, .top_k = 1000000, .top_p = 1.0f}));
    EXPECT_NO_THROW(vkf::validate(SamplingParams{.temperature = 1e-6f, .top_p = 1e-6f}));
}

// A grammar's mask (Sampler::sample(logits, allowed)): only allowed ids come out, greedy or
// not, with bias or without; a mask of another size or one allowing nothing is an error.
TEST(Sampling, MaskedTokensAreNeverPicked) {
    const std::vector<float> logits = spread_logits(20);
    std::vector<std::uint8_t> allowed(20, 0);
    allowed[3] = allowed[11] = 1;
    for (SamplingParams params : {SamplingParams{}, SamplingParams{.temperature = 1.0f, .seed = 9},
                                  SamplingParams{.temperature = 0.0f, .logit_bias = {{19, 100.0f}}},
                                  SamplingParams{.temperature = 2.0f, .top_k = 2, .min_p = 0.1f}}) {
        Sampler sampler(params);
        for (int i = 0; i < 50; ++i) {
            const std::uint32_t id = sampler.sample(logits, allowed);
            ASSERT_TRUE(id == 3 || id == 11) << id;
        }
    }
    Sampler greedy(SamplingParams{});
    EXPECT_EQ(greedy.sample(logits, allowed), logits[11] > logits[3] ? 11u : 3u);
    EXPECT_NE(vkf::test::error_message([&] {
                  greedy.sample(logits, std::vector<std::uint8_t>(19, 1));
              }).find("a mask of 19 entries for 20 logits"),
              std::string::npos);
    EXPECT_NE(vkf::test::error_message([&] {
                  greedy.sample(logits, std::vector<std::uint8_t>(20, 0));
              }).find("allows no token"),
              std::string::npos);
}

TEST(Sampling, NonFiniteLogitsThrowNamingThePosition) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (SamplingParams params : {SamplingParams{}, SamplingParams{.temperature = 1.0f, .top_k = 3}}) {
        Sampler sampler(params);
        std::vector<float> logits = spread_logits(20);
        logits[13] = nan;
        logits[17] = inf;
        std::string m = vkf::test::error_message([&] { sampler.sample(logits); });
        EXPECT_NE(m.find("logit 13"), std::string::npos) << m;
        EXPECT_NE(m.find("NaN"), std::string::npos) << m;
        logits[13] = 0.0f;
        m = vkf::test::error_message([&] { sampler.sample(logits); });
        EXPECT_NE(m.find("logit 17"), std::string::npos) << m;
        logits[17] = -inf;
        m = vkf::test::error_message([&] { sampler.sample(logits); });
        EXPECT_NE(m.find("logit 17"), std::string::npos) << m;
        m = vkf::test::error_message([&] { sampler.sample(std::vector<float>{}); });
        EXPECT_NE(m.find("empty"), std::string::npos) << m;
    }
}

TEST(Sampling, ExtremeTemperaturesStayFinite) {
    const std::vector<float> logits = {-80.0f, 80.0f, 79.0f};
    Sampler cold(SamplingParams{.temperature = 1e-30f, .seed = 1});
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(cold.sample(logits), 1u);
    }
    Sampler hot(SamplingParams{.temperature = 1e30f, .seed = 1});
    std::set<std::uint32_t> seen;
    for (int i = 0; i < 300; ++i) {
        seen.insert(hot.sample(logits));
    }
    EXPECT_EQ(seen.size(), 3u);
}

}  // namespace
