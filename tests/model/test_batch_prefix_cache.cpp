// The prefix cache on a device (BatchOptions::cache_prefixes, host/sched/prefix_cache.hpp): a
// finished prompt's full blocks serve the next turn, which runs only its new rows, and its
// logits match the float64 reference model over the whole prompt; with a pool too small to
// keep them, the blocks are evicted, overwritten by another sequence, and the next turn
// computes everything again, still matching. KV pool and logits poisoned, so a cached block
// read after being overwritten or never written shows.

#include "host/model/batch.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cstdio>
#include <span>
#include <vector>

namespace vkf::test {
namespace {

const std::uint32_t kVocab = small_bloom().vocab_size;
constexpr std::uint32_t kBlock = 16;

// Feeds `ids` to a new sequence and steps until they have all run; the logits of every row
// that ran (Logits::All).
std::vector<float> run(Batch& batch, SequenceId id, std::span<const std::uint32_t> ids) {
    batch.feed(id, ids, Logits::All);
    std::vector<float> logits;
    while (batch.pending(id) > 0) {
        const StepResult r = batch.step();
        EXPECT_TRUE(r.blocked.empty()) << "the pool holds every sequence of this test";
        for (const SequenceOutput& out : r.ran) {
            if (out.id == id) {
                logits.insert(logits.end(), out.logits.begin(), out.logits.end());
            }
        }
    }
    return logits;
}

class BatchPrefixCache : public VulkanTest {
protected:
    // turn 1 (40 tokens), another prompt of `other` tokens, then turn 2 (turn 1 and 9 more):
    // turn 2 takes `cached` tokens from the cache, and its rows match the reference.
    void turns(std::uint32_t pool_blocks, std::uint32_t other, std::uint32_t cached) {
        const TempDir dir("vkf_test_prefix_cache");
        write_random_checkpoint(dir.path(), small_bloom(), 71, DType::F32);
        const Model model(ctx(), dir.path());
        Batch batch(model, BatchOptions{.max_tokens = pool_blocks * kBlock,
                                        .max_sequence_tokens = 64,
                                        .max_sequences = 2,
                                        .block_size = kBlock,
                                        .chunk = 32,
                                        .kv_dtype = DType::F32,
                                        .cache_prefixes = true,
                                        .poison = true});
        const std::vector<std::uint32_t> turn1 = random_token_ids(40, kVocab, 72);
        std::vector<std::uint32_t> turn2 = turn1;
        const std::vector<std::uint32_t> more = random_token_ids(9, kVocab, 73);
        turn2.insert(turn2.end(), more.begin(), more.end());

        const SequenceId first = batch.add();
        run(batch, first, turn1);
        batch.remove(first);
        ASSERT_NE(batch.prefix_cache(), nullptr);
        EXPECT_EQ(batch.prefix_cache()->size(), 2u) << "40 tokens fill two blocks of 16";
        const SequenceId between = batch.add();
        run(batch, between, random_token_ids(other, kVocab, 74));
        batch.remove(between);

        const SequenceId second = batch.add();
        const std::vector<float> logits = run(batch, second, turn2);
        EXPECT_EQ(batch.shared_prefix(second), cached);
        ASSERT_EQ(logits.size(), std::size_t{turn2.size() - cached} * kVocab) << "rows that ran";
        const reference::Model reference(model.config(), model.checkpoint());
        const std::vector<double> ref = reference.forward(turn2, batch.chunk_ends(second));
        double worst = 0.0;
        for (std::uint32_t p = cached; p < turn2.size(); ++p) {
            const ErrorStats e =
                compare_to_reference(std::span(logits).subspan(std::size_t{p - cached} * kVocab, kVocab),
                                     std::span(ref).subspan(std::size_t{p} * kVocab, kVocab));
            EXPECT_LT(e.max_rel, 2e-5) << "position " << p << ": " << describe(e);
            worst = std::max(worst, e.max_rel);
        }
        std::printf("pool of %u blocks: %u tokens from the cache, %llu evictions, largest relative error %.3g\n",
                    pool_blocks, cached, static_cast<unsigned long long>(batch.prefix_cache()->stats().evictions),
                    worst);
        batch.remove(second);
    }
};

TEST_F(BatchPrefixCache, TheNextTurnTakesTheCachedBlocks) {
    turns(16, 30, 32);
}

TEST_F(BatchPrefixCache, EvictedBlocksAreComputedAgain) {
    // 4 blocks: the 60-token prompt between the turns needs all of them, so both cached
    // blocks go back to the pool and are overwritten.
    turns(4, 60, 0);
}

TEST_F(BatchPrefixCache, AWindowRefusesIt) {
    const TempDir dir("vkf_test_prefix_cache");
    write_random_checkpoint(dir.path(), small_bloom(), 71, DType::F32);
    const Model model(ctx(), dir.path());
    try {
        Batch batch(model, BatchOptions{.max_tokens = 256, .window = 32, .cache_prefixes = true});
        ADD_FAILURE() << "a window with the prefix cache was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("prefix caching with a key window"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkf::test
