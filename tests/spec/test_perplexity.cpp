// The perplexity definition (host/spec/perplexity.hpp) on hand-made logits.

#include "base/error.hpp"
#include "host/spec/perplexity.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace vkf {
namespace {

TEST(Perplexity, WindowsAreWholeAndScoredOnTheirSecondHalf) {
    const PerplexityWindows w = perplexity_windows(1000, 128);
    EXPECT_EQ(w.windows, 7u) << "1000 / 128, the remainder unscored";
    EXPECT_EQ(w.first, 64u);
    EXPECT_EQ(w.scored_per_window(), 63u) << "logits of positions 64..126 predict tokens 65..127";
    EXPECT_EQ(w.scored_tokens(), 7u * 63u);
    EXPECT_EQ(w.begin(3), 384u);
    const PerplexityWindows odd = perplexity_windows(37, 13);
    EXPECT_EQ(odd.windows, 2u);
    EXPECT_EQ(odd.first, 6u);
    EXPECT_EQ(odd.scored_per_window(), 6u);
    EXPECT_THROW(perplexity_windows(100, 3), Error) << "no second half to score";
    EXPECT_THROW(perplexity_windows(100, 128), Error) << "shorter than one window";
}

TEST(Perplexity, UniformLogitsGiveTheVocabularySize) {
    NllSum sum;
    const std::vector<float> logits(50, 3.25f);
    for (std::uint32_t t = 0; t < 50; t += 7) {
        sum.add(token_nll(logits, t));
    }
    EXPECT_NEAR(sum.perplexity(), 50.0, 1e-9);
}

TEST(Perplexity, NllIsMinusTheLogSoftmax) {
    // softmax of (ln 1, ln 2, ln 5) is (1/8, 2/8, 5/8).
    const std::vector<double> logits = {0.0, std::log(2.0), std::log(5.0)};
    EXPECT_NEAR(token_nll(logits, 0), std::log(8.0), 1e-12);
    EXPECT_NEAR(token_nll(logits, 2), std::log(8.0 / 5.0), 1e-12);
    // Shifted far up: the same probabilities, no overflow.
    const std::vector<float> shifted = {1000.0f, 1000.0f + std::log(2.0f), 1000.0f + std::log(5.0f)};
    EXPECT_NEAR(token_nll(shifted, 1), std::log(4.0), 1e-4);
    NllSum sum;
    sum.add(token_nll(logits, 0));
    sum.add(token_nll(logits, 2));
    EXPECT_NEAR(sum.perplexity(), std::sqrt(8.0 * 8.0 / 5.0), 1e-9) << "the geometric mean of 1/p";
    EXPECT_TRUE(std::isnan(NllSum{}.mean()));
    EXPECT_THROW(token_nll(logits, 3), Error);
    EXPECT_THROW(token_nll(std::vector<double>{0.0, NAN}, 0), Error);
}

}  // namespace
}  // namespace vkf
