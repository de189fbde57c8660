// Scheduler::restore (host/sched/scheduler.hpp): a saved sequence's tokens taken as computed
// into fresh blocks, the sequence then running on as if it had computed them; and its
// refusals, which leave the pool as it was. tests/capi/test_capi_state.c runs it on a device.

#include "host/sched/scheduler.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace vkf::test {
namespace {

SchedulerOptions pool_of(std::uint32_t blocks, std::uint32_t window = 0) {
    return SchedulerOptions{.blocks = blocks,
                            .block_size = 4,
                            .table_blocks = window != 0 ? window_ring_blocks(window, 8, 4) : blocks,
                            .chunk = 8,
                            .window = window,
                            .sequence_limit = std::uint64_t{blocks} * 4,
                            .vocab_size = 100};
}

std::vector<std::uint32_t> ids(std::uint32_t n) {
    std::vector<std::uint32_t> v(n);
    std::iota(v.begin(), v.end(), 1u);
    return v;
}

TEST(SchedulerRestore, TakesFreshBlocksAndRunsOnFromThere) {
    Scheduler s(pool_of(8));
    const SequenceId other = s.add();
    s.feed(other, ids(3));
    s.complete(s.schedule(), StepOutcome{});
    const SequenceId id = s.add();
    const std::uint32_t ends[] = {6, 9};
    const std::vector<std::uint32_t> blocks = s.restore(id, ids(9), ends);
    EXPECT_EQ(blocks.size(), 3u);  // 9 tokens in blocks of 4
    EXPECT_EQ(s.blocks().used(), 4u);
    EXPECT_EQ(s.position(id), 9u);
    EXPECT_EQ(s.pending(id), 0u);
    EXPECT_EQ(s.chunk_ends(id), (std::vector<std::uint32_t>{6, 9}));
    for (std::uint32_t b = 0; b < 3; ++b) {
        EXPECT_EQ(s.table(id).block(b), blocks[b]);
        EXPECT_NE(blocks[b], s.table(other).block(0)) << "a restored block is its own";
    }
    // The next token goes to position 9, slot 1 of the third block.
    const std::uint32_t next[] = {42};
    s.feed(id, next);
    const StepSchedule step = s.schedule();
    ASSERT_EQ(step.sequences.size(), 1u);
    EXPECT_EQ(step.positions, (std::vector<std::uint32_t>{9}));
    EXPECT_EQ(step.slots, (std::vector<std::uint32_t>{blocks[2] * 4 + 1}));
    s.complete(step, StepOutcome{});
    EXPECT_EQ(s.position(id), 10u);
}

TEST(SchedulerRestore, RefusalsLeaveThePoolAsItWas) {
    Scheduler s(pool_of(4));
    const std::uint32_t ends[] = {5};
    const SequenceId fed = s.add();
    s.feed(fed, ids(2));
    EXPECT_EQ(error_message([&] { s.restore(fed, ids(5), ends); }),
              "batch: sequence 1 has tokens already; a state is restored into a new one");
    const SequenceId empty = s.add();
    EXPECT_EQ(error_message([&] { s.restore(empty, {}, {}); }),
              "batch: a saved state of 0 tokens; a sequence holds 1 to 16");
    const std::vector<std::uint32_t> outside = {1, 2, 100};
    EXPECT_EQ(error_message([&] { s.restore(empty, outside, ends); }),
              "batch: token id 100 at position 2 is not below the vocabulary size 100");
    EXPECT_EQ(s.blocks().used(), 0u);
    // 16 tokens need all 4 blocks; one is held by another sequence.
    s.complete(s.schedule(), StepOutcome{});
    const std::uint32_t all[] = {16};
    EXPECT_EQ(error_message([&] { s.restore(empty, ids(16), all); }),
              "batch: no room for a saved state of 16 tokens: it needs 4 KV blocks of 4 tokens, 3 are free");
    EXPECT_EQ(s.blocks().used(), 1u) << "the blocks it took went back";

    Scheduler windowed(pool_of(16, 8));
    const SequenceId w = windowed.add();
    EXPECT_EQ(error_message([&] { windowed.restore(w, ids(5), ends); }),
              "batch: a saved state cannot be restored under a key window (8 tokens)");
}

}  // namespace
}  // namespace vkf::test
