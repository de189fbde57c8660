// Log-probabilities from BatchGenerator (issue 43) against log_softmax of the float64 reference
// model's logits: each generated token's and its top N, for a sampled, biased generation (the
// logprobs are the model's, not the sampler's), and a prompt's (echo), whose sequence runs
// every prompt row although another holds the same prompt (Logits::Every shares no prefix).

#include "host/model/batch_generation.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <vector>

namespace vkf::test {
namespace {

const std::uint32_t kVocab = small_bloom().vocab_size;

std::vector<double> log_softmax(std::span<const double> row) {
    const double max_logit = *std::max_element(row.begin(), row.end());
    double sum = 0.0;
    for (double l : row) {
        sum += std::exp(l - max_logit);
    }
    std::vector<double> out(row.size());
    for (std::size_t i = 0; i < row.size(); ++i) {
        out[i] = row[i] - max_logit - std::log(sum);
    }
    return out;
}

class BatchLogprobs : public VulkanTest {};

// Logprobs are log_softmax of the model's logits: checked against the float64 reference's
// logits at each generated position, for a sampled generation with a biased sampler (the
// logprobs are the model's, not the sampler's).
TEST_F(BatchLogprobs, LogprobsAreLogSoftmaxOfTheReferenceLogits) {
    const TempDir dir("vkf_test_batch");
    write_random_checkpoint(dir.path(), small_bloom(), 61, DType::F32);
    const Model model(ctx(), dir.path());
    const std::vector<std::uint32_t> prompt = random_token_ids(11, kVocab, 62);
    Batch batch(model, BatchOptions{.max_tokens = 256, .max_sequence_tokens = 64, .kv_dtype = DType::F32});
    BatchGenerator generator(batch);
    std::vector<std::uint32_t> streamed;
    generator.submit(prompt, GenerationOptions{.n_predict = 8,
                                               .sampling = {.temperature = 1.0f, .seed = 5, .logit_bias = {{3, 4.0f}}},
                                               .logprobs = 5,
                                               .on_logprobs = [&](std::uint32_t index, const TokenLogprobs& lp) {
                                                   EXPECT_EQ(index, streamed.size());
                                                   streamed.push_back(lp.chosen.id);
                                               }});
    const GenerationResult r = generator.run().begin()->second;
    ASSERT_EQ(r.logprobs.size(), r.tokens.size());
    EXPECT_EQ(streamed, r.tokens);
    std::vector<std::uint32_t> ids = prompt;
    ids.insert(ids.end(), r.tokens.begin(), r.tokens.end() - 1);
    const reference::Model reference(model.config(), model.checkpoint());
    const std::vector<double> ref = reference.forward(ids, r.chunk_ends);
    for (std::size_t k = 0; k < r.tokens.size(); ++k) {
        const std::span<const double> row = std::span(ref).subspan((prompt.size() - 1 + k) * kVocab, kVocab);
        const std::vector<double> log_p = log_softmax(row);
        const auto expected = [&](std::uint32_t id) { return log_p[id]; };
        const TokenLogprobs& lp = r.logprobs[k];
        EXPECT_EQ(lp.chosen.id, r.tokens[k]);
        EXPECT_NEAR(lp.chosen.logprob, expected(r.tokens[k]), 1e-4) << "token " << k;
        ASSERT_EQ(lp.top.size(), 5u);
        for (std::size_t i = 0; i < lp.top.size(); ++i) {
            EXPECT_NEAR(lp.top[i].logprob, expected(lp.top[i].id), 1e-4) << "token " << k << " top " << i;
            if (i > 0) {
                EXPECT_GE(lp.top[i - 1].logprob, lp.top[i].logprob);
            }
        }
        // The most likely token by the reference is the first of the top (its margin allowing).
        const auto best = static_cast<std::uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
        EXPECT_NEAR(lp.top[0].logprob, expected(best), 1e-4) << "token " << k;
    }
}

// Prompt logprobs (echo): every prompt token after the first, from the row before it, against
// the reference; a second sequence with the same prompt, fed while the first holds it, still
// runs its prompt rows (their logits are wanted, so it shares no prefix).
TEST_F(BatchLogprobs, PromptLogprobsAreLogSoftmaxOfTheReferenceLogits) {
    const TempDir dir("vkf_test_batch");
    write_random_checkpoint(dir.path(), small_bloom(), 63, DType::F32);
    const Model model(ctx(), dir.path());
    const std::vector<std::uint32_t> prompt = random_token_ids(21, kVocab, 64);
    Batch batch(model, BatchOptions{.max_tokens = 256, .max_sequence_tokens = 64, .kv_dtype = DType::F32});
    BatchGenerator generator(batch);
    generator.submit(prompt, GenerationOptions{.n_predict = 3});
    generator.step();
    const SequenceId echoed =
        generator.submit(prompt, GenerationOptions{.n_predict = 3, .logprobs = 2, .prompt_logprobs = true});
    const std::map<SequenceId, GenerationResult> results = generator.run();
    const GenerationResult& r = results.at(echoed);
    ASSERT_EQ(r.prompt_logprobs.size(), prompt.size() - 1);
    ASSERT_EQ(r.logprobs.size(), r.tokens.size());
    const reference::Model reference(model.config(), model.checkpoint());
    const std::vector<double> ref = reference.forward(prompt);
    for (std::size_t k = 0; k + 1 < prompt.size(); ++k) {
        const std::vector<double> log_p = log_softmax(std::span(ref).subspan(k * kVocab, kVocab));
        const TokenLogprobs& lp = r.prompt_logprobs[k];
        EXPECT_EQ(lp.chosen.id, prompt[k + 1]);
        EXPECT_NEAR(lp.chosen.logprob, log_p[prompt[k + 1]], 1e-4) << "prompt token " << k + 1;
        EXPECT_EQ(lp.top.size(), 2u);
    }
    // The generated tokens are the greedy ones the plain sequence got.
    EXPECT_EQ(r.tokens, results.begin()->second.tokens);
}

}  // namespace
}  // namespace vkf::test
