// The prefix cache at schedule level (host/sched/prefix_cache.hpp, part of test_scheduler):
// a finished sequence's full blocks serve a later prompt that starts with the same tokens,
// whole blocks only and never the last fed token; the least recently used block only the
// cache holds goes back when the pool has no free one, a chain's later blocks before its
// earlier ones; different cache salts share nothing; a window refuses the cache.

#include "base/error.hpp"
#include "host/sched/scheduler.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace vkf::test {
namespace {

SchedulerOptions cached(std::uint32_t blocks, std::uint32_t block_size) {
    return SchedulerOptions{.blocks = blocks,
                            .block_size = block_size,
                            .table_blocks = blocks,
                            .max_sequences = 4,
                            .chunk = 64,
                            .sequence_limit = std::uint64_t{blocks} * block_size,
                            .vocab_size = 1000,
                            .cache_prefixes = true};
}

std::vector<std::uint32_t> run_of(std::uint32_t n, std::uint32_t first) {
    std::vector<std::uint32_t> ids(n);
    std::iota(ids.begin(), ids.end(), first);
    return ids;
}

// Feeds `ids` to a new sequence, runs it to the end and returns it.
SequenceId computed(Scheduler& s, const std::vector<std::uint32_t>& ids, std::uint64_t salt = 0) {
    const SequenceId id = s.add(salt);
    s.feed(id, ids);
    while (s.pending(id) > 0) {
        s.complete(s.schedule(), StepOutcome{});
    }
    return id;
}

TEST(PrefixCache, AFinishedPromptServesTheNextTurn) {
    Scheduler s(cached(16, 4));
    std::vector<std::uint32_t> turn1 = run_of(10, 100);
    const SequenceId first = computed(s, turn1);
    const std::vector<std::uint32_t> blocks{s.table(first).block(0), s.table(first).block(1)};
    s.remove(first);
    EXPECT_EQ(s.blocks().used(), 2u) << "the two full blocks stay cached, the partial one goes";
    EXPECT_EQ(s.prefix_cache()->size(), 2u);
    EXPECT_EQ(s.prefix_cache()->reclaimable(), 2u);

    std::vector<std::uint32_t> turn2 = turn1;
    turn2.insert(turn2.end(), {7, 8, 9});
    const SequenceId second = s.add();
    s.feed(second, turn2);
    EXPECT_EQ(s.shared_prefix(second), 8u) << "two whole blocks from the cache";
    EXPECT_EQ(s.position(second), 8u);
    EXPECT_EQ(s.table(second).block(0), blocks[0]);
    EXPECT_EQ(s.table(second).block(1), blocks[1]);
    EXPECT_EQ(s.chunk_ends(second), std::vector<std::uint32_t>{8});
    const StepSchedule step = s.schedule();
    EXPECT_EQ(step.rows(), 5u) << "only the tokens after the cached blocks run";
    EXPECT_TRUE(step.copies.empty()) << "cached blocks are full: nothing is written into them";
    EXPECT_EQ(s.prefix_cache()->stats().lookups, 2u);
    EXPECT_EQ(s.prefix_cache()->stats().hit_tokens, 8u);

    // A prompt of exactly the cached blocks still runs its last token.
    s.complete(step, StepOutcome{});
    s.remove(second);
    const SequenceId exact = s.add();
    s.feed(exact, std::span(turn1).first(8));
    EXPECT_EQ(s.shared_prefix(exact), 4u) << "the last fed token is never taken from the cache";
}

TEST(PrefixCache, OnlyTheSamePrefixAtTheSamePositionsHits) {
    Scheduler s(cached(16, 4));
    s.remove(computed(s, run_of(9, 100)));
    std::vector<std::uint32_t> changed = run_of(9, 100);
    changed[2] = 999;  // the first block differs: its hash and every later one's
    const SequenceId a = s.add();
    s.feed(a, changed);
    EXPECT_EQ(s.shared_prefix(a), 0u);
    std::vector<std::uint32_t> shifted{1};
    const std::vector<std::uint32_t> tail = run_of(8, 100);
    shifted.insert(shifted.end(), tail.begin(), tail.end());
    const SequenceId b = s.add();
    s.feed(b, shifted);
    EXPECT_EQ(s.shared_prefix(b), 0u) << "the same tokens one position later are another chain";
}

TEST(PrefixCache, SaltsKeepTenantsApart) {
    Scheduler s(cached(16, 4));
    s.remove(computed(s, run_of(9, 100), 1));
    const SequenceId other = s.add(2);
    s.feed(other, run_of(9, 100));
    EXPECT_EQ(s.shared_prefix(other), 0u) << "another salt took a cached prefix";
    const SequenceId same = s.add(1);
    s.feed(same, run_of(9, 100));
    EXPECT_EQ(s.shared_prefix(same), 8u);
    // Nor do live sequences of two salts share.
    const SequenceId live = computed(s, run_of(12, 500), 3);
    const SequenceId prober = s.add(4);
    s.feed(prober, run_of(12, 500));
    EXPECT_EQ(s.shared_prefix(prober), 0u) << "a live prefix crossed salts";
    s.remove(live);
}

TEST(PrefixCache, TheLeastRecentlyUsedGoesWhenThePoolRunsOut) {
    Scheduler s(cached(6, 4));
    s.remove(computed(s, run_of(9, 100)));  // 2 cached: A0 A1
    s.remove(computed(s, run_of(9, 200)));  // 2 more: B0 B1 (A is older)
    EXPECT_EQ(s.blocks().free(), 2u);
    // 16 tokens need 4 blocks: 2 free, then A's later block, then A's first.
    const SequenceId big = computed(s, run_of(16, 300));
    EXPECT_EQ(s.prefix_cache()->stats().evictions, 2u);
    EXPECT_EQ(s.prefix_cache()->size(), 2u);
    const SequenceId b = s.add();
    s.feed(b, run_of(9, 200));
    EXPECT_EQ(s.shared_prefix(b), 8u) << "the more recent chain was evicted";
    s.remove(b);
    s.remove(big);
    const SequenceId a = s.add();
    s.feed(a, run_of(9, 100));
    EXPECT_EQ(s.shared_prefix(a), 0u);
}

TEST(PrefixCache, AChainLosesItsLaterBlocksFirst) {
    Scheduler s(cached(5, 4));
    s.remove(computed(s, run_of(13, 100)));                 // 3 cached: blocks 0, 1, 2 of one chain
    const SequenceId other = computed(s, run_of(12, 500));  // 2 free, then 1 evicted
    EXPECT_EQ(s.prefix_cache()->stats().evictions, 1u);
    s.remove(other);
    const SequenceId again = s.add();
    s.feed(again, run_of(13, 100));
    EXPECT_EQ(s.shared_prefix(again), 8u) << "the chain's first two blocks stayed";
}

TEST(PrefixCache, AfterAHitAChainStillLosesItsLaterBlocksFirst) {
    // vkf-server's second request took a cached chain, and the next prompt that needed room
    // evicted the chain's first block: every later prompt missed the whole chain.
    Scheduler s(cached(5, 4));
    s.remove(computed(s, run_of(13, 100)));  // 3 cached: blocks 0, 1, 2 of one chain
    const SequenceId hit = computed(s, run_of(13, 100));
    EXPECT_EQ(s.shared_prefix(hit), 12u);
    s.remove(hit);
    const SequenceId other = computed(s, run_of(12, 500));  // 2 free, then 1 evicted
    EXPECT_EQ(s.prefix_cache()->stats().evictions, 1u);
    s.remove(other);
    const SequenceId again = s.add();
    s.feed(again, run_of(13, 100));
    EXPECT_EQ(s.shared_prefix(again), 8u) << "the chain's first two blocks stayed";
}

TEST(PrefixCache, BlocksASequenceHoldsAreNeverEvicted) {
    Scheduler s(cached(4, 4));
    const SequenceId first = computed(s, run_of(9, 100));
    const std::vector<std::uint32_t> kept{s.table(first).block(0), s.table(first).block(1)};
    s.remove(first);
    const SequenceId user = s.add();
    s.feed(user, run_of(10, 100));  // takes both cached blocks
    EXPECT_EQ(s.shared_prefix(user), 8u);
    const SequenceId hungry = s.add();
    s.feed(hungry, run_of(16, 700));
    // The user's third block and one of the hungry prompt's: the pool's two free blocks. The
    // cached two are the user's too, so the hungry prompt runs one block's rows and no more.
    const StepSchedule step = s.schedule();
    EXPECT_EQ(s.prefix_cache()->stats().evictions, 0u);
    EXPECT_EQ(s.prefix_cache()->reclaimable(), 0u);
    EXPECT_EQ(step.rows(), 2u + 4u);
    EXPECT_EQ(s.table(user).block(0), kept[0]);
    EXPECT_EQ(s.table(user).block(1), kept[1]);
}

TEST(PrefixCache, AWindowRefusesIt) {
    SchedulerOptions o = cached(16, 4);
    o.window = 8;
    o.table_blocks = window_ring_blocks(8, o.chunk, 4);
    EXPECT_THROW(
        {
            try {
                Scheduler s(o);
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("key window"), std::string::npos) << e.what();
                throw;
            }
        },
        Error);
}

}  // namespace
}  // namespace vkf::test
