// Pipeline preparation (runtime/pipeline_preparation.hpp, Session::prepare): the steps a
// prompt and its decoding take are recorded, and their pipelines made, before the first
// token, so that generation itself makes no pipeline and records no step; a second
// preparation finds everything made; the prepared steps compute what unprepared ones do.
// Counts only: time is vkf-bench's (startup suite), never asserted here.

#include "base/error.hpp"
#include "host/model/generation.hpp"
#include "host/model/session.hpp"
#include "host/quant/quant_format.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cstdlib>

namespace vkf::test {
namespace {

class Prepare : public VulkanTest {};

std::vector<std::uint32_t> prompt_ids(std::uint32_t n, std::uint32_t vocab) {
    std::vector<std::uint32_t> ids(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        ids[i] = (i * 7919u + 13u) % vocab;
    }
    return ids;
}

TEST_F(Prepare, MakesEveryPipelineBeforeTheFirstToken) {
    const Model model(ctx(), small_bloom(), *parse_weight_format("f16"));
    const std::vector<std::uint32_t> prompt = prompt_ids(11, model.config().vocab_size);
    // Chunks of 4, 4 and 3 tokens (the last with logits), then the decoding step.
    const SessionOptions options{.max_tokens = 32, .chunk = 4};
    Session prepared(model, options);
    const std::size_t before = ctx().pipeline_count();
    const PreparationStats first = prepared.prepare(static_cast<std::uint32_t>(prompt.size()));
    EXPECT_GT(first.pipelines, 0u);
    EXPECT_EQ(first.created, ctx().pipeline_count() - before);
    EXPECT_LE(first.created, first.pipelines);
    EXPECT_LE(first.cache_hits, first.created);
    EXPECT_LE(first.threads, std::max<std::size_t>(first.created, 1));
    EXPECT_GE(first.seconds, first.create_seconds);
    EXPECT_EQ(prepared.stats().recordings, 3u);  // {4, no logits}, {3, logits}, {1, logits}

    const std::size_t made = ctx().pipeline_count();
    const GenerationResult a = generate(prepared, prompt, {.n_predict = 5, .keep_logits = true});
    EXPECT_EQ(ctx().pipeline_count(), made) << "generation made pipelines the preparation missed";
    EXPECT_EQ(prepared.stats().recordings, 3u) << "generation recorded steps the preparation missed";

    // A second session's preparation finds every pipeline made; its steps are its own.
    Session second(model, options);
    const PreparationStats again = second.prepare(static_cast<std::uint32_t>(prompt.size()));
    EXPECT_EQ(again.pipelines, first.pipelines);
    EXPECT_EQ(again.created, 0u);
    EXPECT_EQ(again.threads, 0u);
    EXPECT_EQ(second.stats().recordings, 3u);
    // The same session again: nothing to record.
    EXPECT_EQ(second.prepare(static_cast<std::uint32_t>(prompt.size())).pipelines, 0u);

    // Unprepared, the same kernels give the same logits.
    Session lazy(model, options);
    const GenerationResult b = generate(lazy, prompt, {.n_predict = 5, .keep_logits = true});
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.logits, b.logits);
}

TEST_F(Prepare, ThreadsFromTheEnvironment) {
    ASSERT_EQ(setenv("VKF_PIPELINE_THREADS", "0", 1), 0);
    EXPECT_THROW(PipelinePreparation{ctx()}, Error);
    ASSERT_EQ(setenv("VKF_PIPELINE_THREADS", "3x", 1), 0);
    EXPECT_THROW(preparation_threads(), Error);
    ASSERT_EQ(setenv("VKF_PIPELINE_THREADS", "1", 1), 0);
    EXPECT_EQ(preparation_threads(), 1u);
    ASSERT_EQ(unsetenv("VKF_PIPELINE_THREADS"), 0);
    EXPECT_GE(preparation_threads(), 1u);
    EXPECT_LE(preparation_threads(), PipelinePreparation::kMaxWorkers);
}

}  // namespace
}  // namespace vkf::test
