// The Scheduler's policies at schedule level, without a device (host/sched/scheduler.hpp):
// decode first, prompt chunks, the step's row and sequence budgets, blocking on an empty pool
// and resuming once blocks free, prefix sharing with copy on write, the window ring returning
// blocks, removal freeing blocks, the later stages' followed rows, the prompt chunk sized from
// measured time, and refusals with their messages. test_scheduler_property.cpp runs random
// sequences of calls against invariants. test_batch runs the same policies on a device.

#include "host/sched/scheduler.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace vkf::test {
namespace {

SchedulerOptions small(std::uint32_t blocks, std::uint32_t block_size, std::uint32_t chunk,
                       std::uint32_t max_sequences = 8) {
    return SchedulerOptions{.blocks = blocks,
                            .block_size = block_size,
                            .table_blocks = blocks,
                            .max_sequences = max_sequences,
                            .chunk = chunk,
                            .sequence_limit = std::uint64_t{blocks} * block_size,
                            .vocab_size = 100};
}

// n tokens from `first` on (distinct runs share no prefix unless asked to).
std::vector<std::uint32_t> run_of(std::uint32_t n, std::uint32_t first) {
    std::vector<std::uint32_t> ids(n);
    std::iota(ids.begin(), ids.end(), first);
    for (std::uint32_t& id : ids) {
        id %= 100;
    }
    return ids;
}

std::vector<SequenceId> ids_of(const StepSchedule& step) {
    std::vector<SequenceId> ids;
    for (const ScheduledSequence& s : step.sequences) {
        ids.push_back(s.id);
    }
    return ids;
}

// Schedules and completes one step; returns its schedule.
StepSchedule step(Scheduler& s) {
    StepSchedule schedule = s.schedule();
    s.complete(schedule, StepOutcome{});
    return schedule;
}

TEST(Scheduler, DecodeTokensFirstThenPromptsInTheOrderAdded) {
    Scheduler s(small(16, 4, 8));
    const SequenceId prompt = s.add(), decode = s.add(), later = s.add();
    s.feed(prompt, run_of(10, 0));
    s.feed(decode, run_of(1, 20));
    s.feed(later, run_of(5, 40));
    const StepSchedule first = step(s);
    EXPECT_EQ(ids_of(first), (std::vector<SequenceId>{decode, prompt}));
    EXPECT_EQ(first.sequences[0].rows, 1u);
    EXPECT_EQ(first.sequences[1].rows, 7u) << "the prompt takes what is left of the step's rows";
    EXPECT_EQ(first.deferred, std::vector<SequenceId>{later});
    EXPECT_TRUE(first.blocked.empty());
    EXPECT_EQ(first.max_q_len, 7u);
    // The decode sequence's next token goes first again; the two prompts follow in order.
    s.feed(decode, run_of(1, 21));
    const StepSchedule second = step(s);
    EXPECT_EQ(ids_of(second), (std::vector<SequenceId>{decode, prompt, later}));
    EXPECT_EQ(second.sequences[1].rows, 3u);
    EXPECT_EQ(second.sequences[2].rows, 4u);
    EXPECT_EQ(second.sequences[2].q_start, 4u);
}

TEST(Scheduler, ChunksALongPromptAndReturnsTheLogitsAskedFor) {
    Scheduler s(small(16, 4, 8));
    const SequenceId id = s.add();
    const std::vector<std::uint32_t> prompt = run_of(20, 3);
    s.feed(id, prompt, Logits::Last);
    std::vector<std::uint32_t> positions, ids;
    for (std::uint32_t rows : {8u, 8u, 4u}) {
        const StepSchedule schedule = s.schedule();
        ASSERT_EQ(schedule.sequences.size(), 1u);
        EXPECT_EQ(schedule.rows(), rows);
        EXPECT_EQ(schedule.logit_rows, rows == 4 ? std::vector<std::uint32_t>{3} : std::vector<std::uint32_t>{})
            << "Logits::Last: the last fed token's row only";
        positions.insert(positions.end(), schedule.positions.begin(), schedule.positions.end());
        ids.insert(ids.end(), schedule.ids.begin(), schedule.ids.end());
        const std::vector<StepProgress> progress = s.complete(schedule, StepOutcome{});
        ASSERT_EQ(progress.size(), 1u);
        EXPECT_EQ(progress[0].done, rows == 4);
    }
    EXPECT_EQ(ids, prompt);
    EXPECT_EQ(positions, run_of(20, 0));
    EXPECT_EQ(s.chunk_ends(id), (std::vector<std::uint32_t>{8, 16, 20}));
    EXPECT_TRUE(s.schedule().empty()) << "nothing pending";
    s.feed(id, run_of(3, 50), Logits::All);
    EXPECT_EQ(step(s).logit_rows, (std::vector<std::uint32_t>{0, 1, 2}));
    s.feed(id, run_of(2, 60), Logits::None);
    const StepSchedule none = step(s);
    EXPECT_TRUE(none.logit_rows.empty());
    EXPECT_EQ(none.sequences[0].logit_rows, 0u);
}

TEST(Scheduler, StepsKeepToTheirRowAndSequenceBudgets) {
    Scheduler s(small(32, 4, 4, 2));
    std::vector<SequenceId> ids;
    for (std::uint32_t i = 0; i < 3; ++i) {
        ids.push_back(s.add());
        s.feed(ids.back(), run_of(1, 10 * i));
    }
    const StepSchedule decode = step(s);
    EXPECT_EQ(ids_of(decode), (std::vector<SequenceId>{ids[0], ids[1]})) << "two sequences a step";
    EXPECT_EQ(decode.deferred, std::vector<SequenceId>{ids[2]});
    EXPECT_EQ(ids_of(step(s)), std::vector<SequenceId>{ids[2]}) << "the deferred one runs next";
    // A prompt of exactly the step's rows leaves none for the next sequence: deferred, not blocked.
    const SequenceId a = s.add(), b = s.add();
    s.feed(a, run_of(4, 1));
    s.feed(b, run_of(4, 7));
    const StepSchedule full = step(s);
    EXPECT_EQ(ids_of(full), std::vector<SequenceId>{a});
    EXPECT_EQ(full.deferred, std::vector<SequenceId>{b});
    EXPECT_TRUE(full.blocked.empty());
}

TEST(Scheduler, SlotsAndTheSequenceTableFollowTheBlockTable) {
    Scheduler s(small(8, 4, 16));
    const SequenceId id = s.add();
    s.feed(id, run_of(10, 0));
    const StepSchedule schedule = s.schedule();
    const BlockTable& table = s.table(id);
    ASSERT_EQ(table.held(), 3u);
    for (std::uint32_t p = 0; p < 10; ++p) {
        EXPECT_EQ(schedule.slots[p], table.block(p / 4) * 4 + p % 4) << "position " << p;
    }
    EXPECT_EQ(schedule.sequences[0].blocks, table.entries());
    EXPECT_EQ(schedule.sequences[0].kv_len(), 10u);
    EXPECT_EQ(s.blocks().used(), 3u) << "a table grows a block at a time";
}

// Room for two prompts but not their growth: the step lists them blocked and runs nothing,
// nothing computed is lost, and once one leaves the other runs in the blocks it freed.
TEST(Scheduler, BlocksWhenThePoolIsEmptyAndResumesWhenBlocksFree) {
    Scheduler s(small(4, 4, 16));
    const SequenceId a = s.add(), b = s.add();
    s.feed(a, run_of(8, 0));
    s.feed(b, run_of(8, 50));
    EXPECT_EQ(ids_of(step(s)), (std::vector<SequenceId>{a, b}));
    EXPECT_EQ(s.blocks().free(), 0u);
    s.feed(a, run_of(1, 9));
    s.feed(b, run_of(1, 59));
    const StepSchedule blocked = step(s);
    EXPECT_TRUE(blocked.empty());
    EXPECT_EQ(blocked.blocked, (std::vector<SequenceId>{a, b}));
    EXPECT_EQ(s.position(a), 8u);
    EXPECT_EQ(s.pending(a), 1u);
    s.remove(b);
    EXPECT_EQ(s.blocks().free(), 2u) << "removal frees its blocks";
    const StepSchedule resumed = step(s);
    EXPECT_EQ(ids_of(resumed), std::vector<SequenceId>{a});
    EXPECT_TRUE(resumed.blocked.empty());
    EXPECT_EQ(s.position(a), 9u);
    // A prompt the pool holds only part of runs that part, then blocks.
    const SequenceId c = s.add();
    s.feed(c, run_of(12, 30));
    const StepSchedule part = step(s);
    EXPECT_EQ(ids_of(part), std::vector<SequenceId>{c});
    EXPECT_EQ(part.rows(), 4u) << "one free block: four rows";
    EXPECT_EQ(step(s).blocked, std::vector<SequenceId>{c});
    s.remove(a);
    s.remove(c);
    EXPECT_EQ(s.blocks().used(), 0u);
}

// test_batch's SharedPrefixIsStoredOnceAndCopiedOnWrite at schedule level: a 37-token system
// prompt (two blocks and 5 tokens) shared, its partly filled block copied at the first write.
TEST(Scheduler, SharedPrefixIsStoredOnceAndCopiedOnWrite) {
    Scheduler s(small(32, 16, 128));
    const std::vector<std::uint32_t> system = run_of(37, 11);
    std::vector<std::uint32_t> a = system, b = system;
    a.insert(a.end(), {90, 91, 92, 93, 94, 95, 96, 97, 98});
    b.insert(b.end(), {1, 2, 3, 4});
    const SequenceId first = s.add();
    s.feed(first, a);
    step(s);
    const std::uint32_t used_alone = s.blocks().used();
    const SequenceId second = s.add();
    s.feed(second, b);
    EXPECT_EQ(s.shared_prefix(second), 37u);
    EXPECT_EQ(s.position(second), 37u);
    EXPECT_EQ(s.chunk_ends(second), std::vector<std::uint32_t>{37}) << "the donor's chunks up to the prefix";
    EXPECT_EQ(s.blocks().references(s.table(first).block(0)), 2u);
    const StepSchedule schedule = step(s);
    ASSERT_EQ(schedule.sequences.size(), 1u);
    EXPECT_EQ(schedule.rows(), 4u) << "the shared prompt was computed again";
    ASSERT_EQ(schedule.copies.size(), 1u) << "the partly filled shared block was not copied";
    EXPECT_EQ(schedule.copies[0].from, s.table(first).block(2));
    EXPECT_EQ(schedule.copies[0].to, s.table(second).block(2));
    EXPECT_EQ(s.blocks().used(), used_alone + 1) << "the shared blocks are not stored once";
    EXPECT_EQ(s.table(second).block(1), s.table(first).block(1));
    EXPECT_EQ(s.blocks().references(s.table(first).block(2)), 1u);
    // The last fed token always runs (its logits): the same prompt again shares all but it.
    const SequenceId again = s.add();
    s.feed(again, a);
    EXPECT_EQ(s.shared_prefix(again), a.size() - 1);
    // The donor writing into a block it shares copies it too; the sharer's keys stay.
    const SequenceId donor = s.add(), sharer = s.add();
    s.feed(donor, run_of(20, 60));
    step(s);
    s.feed(sharer, run_of(30, 60));
    EXPECT_EQ(s.shared_prefix(sharer), 20u);
    s.feed(donor, run_of(1, 5));
    const StepSchedule both = step(s);
    EXPECT_EQ(ids_of(both), (std::vector<SequenceId>{donor, sharer}));
    const std::uint32_t original = s.table(sharer).block(1);
    ASSERT_EQ(both.copies.size(), 1u) << "the first writer copies; the other then holds the block alone";
    EXPECT_EQ(both.copies[0], (BlockCopy{.from = original, .to = s.table(donor).block(1)}));
    EXPECT_EQ(s.pending(again), 0u) << "its one token ran in the donor's prompt step";
}

TEST(Scheduler, PrefixesAreSharedOnlyWhereComputedAndAsked) {
    SchedulerOptions o = small(32, 4, 4);
    Scheduler s(o);
    const SequenceId a = s.add();
    s.feed(a, run_of(12, 0));
    step(s);  // 4 of a's 12 tokens computed
    const SequenceId b = s.add();
    s.feed(b, run_of(12, 0));
    EXPECT_EQ(s.shared_prefix(b), 4u) << "only computed tokens are shared";
    o.share_prefixes = false;
    Scheduler off(o);
    const SequenceId c = off.add();
    off.feed(c, run_of(5, 0));
    step(off);
    const SequenceId d = off.add();
    off.feed(d, run_of(5, 0));
    EXPECT_EQ(off.shared_prefix(d), 0u);
    EXPECT_EQ(off.position(d), 0u);
}

TEST(Scheduler, RemovalFreesOnlyTheBlocksNoOtherSequenceHolds) {
    Scheduler s(small(16, 4, 64));
    const SequenceId a = s.add();
    s.feed(a, run_of(17, 0));
    step(s);
    const SequenceId b = s.add();
    s.feed(b, run_of(18, 0));  // shares blocks 0..4 (17 tokens), copies block 4 on its write
    step(s);
    EXPECT_EQ(s.blocks().used(), 6u);
    s.remove(a);
    EXPECT_EQ(s.blocks().used(), 5u) << "a's blocks b holds stay";
    for (std::uint32_t blk = 0; blk < 5; ++blk) {
        EXPECT_EQ(s.blocks().references(s.table(b).block(blk)), 1u);
    }
    s.remove(b);
    EXPECT_EQ(s.blocks().used(), 0u);
}

// A window of 8 keys in blocks of 4 with steps of 4 rows: rings of ceil(12 / 4) + 1 = 4.
SchedulerOptions windowed() {
    return SchedulerOptions{.blocks = 12,
                            .block_size = 4,
                            .table_blocks = window_ring_blocks(8, 4, 4),
                            .max_sequences = 4,
                            .chunk = 4,
                            .window = 8,
                            .sequence_limit = 1u << 30,
                            .vocab_size = 100};
}

TEST(Scheduler, WindowRingReturnsTheBlocksNoQuerySees) {
    Scheduler s(windowed());
    ASSERT_EQ(s.options().table_blocks, 4u);
    const SequenceId id = s.add();
    s.feed(id, run_of(30, 0));
    std::uint32_t most = 0;
    while (s.pending(id) > 0 || s.position(id) < 100) {
        if (s.pending(id) == 0) {
            s.feed(id, run_of(1, s.position(id)));
        }
        const StepSchedule schedule = step(s);
        ASSERT_EQ(schedule.sequences.size(), 1u);
        EXPECT_EQ(schedule.sequences[0].blocks.size(), 4u) << "the table is the ring";
        const std::uint32_t end = schedule.sequences[0].kv_len();
        const std::uint32_t last = schedule.slots.back();
        EXPECT_EQ(last, schedule.sequences[0].blocks[((end - 1) / 4) % 4] * 4 + (end - 1) % 4);
        most = std::max(most, s.blocks_held(id));
    }
    EXPECT_LE(most, 4u) << "the ring's blocks bound the sequence";
    EXPECT_EQ(s.blocks().used(), s.blocks_held(id));
    EXPECT_EQ(s.table(id).first() * 4 + 8 + 4, s.table(id).end() * 4) << "blocks before the window went back";
    s.remove(id);
    EXPECT_EQ(s.blocks().used(), 0u);
}

TEST(Scheduler, WindowedPrefixTakesOnlyTheBlocksItsWindowSees) {
    Scheduler s(windowed());
    const SequenceId donor = s.add();
    s.feed(donor, run_of(14, 0));
    while (s.pending(donor) > 0) {
        step(s);
    }
    ASSERT_EQ(s.table(donor).first(), 1u) << "the donor freed block 0";
    const SequenceId sharer = s.add();
    s.feed(sharer, run_of(16, 0));
    EXPECT_EQ(s.shared_prefix(sharer), 14u);
    EXPECT_EQ(s.table(sharer).first(), 1u) << "(14 - 8) / 4: block 0 is outside its window";
    EXPECT_EQ(s.blocks_held(sharer), 3u);
    // A donor that freed a block the sharer's window still needs shares nothing.
    Scheduler t(windowed());
    const SequenceId old = t.add();
    t.feed(old, run_of(40, 0));
    while (t.pending(old) > 0) {
        step(t);
    }
    t.feed(old, run_of(1, 40));
    step(t);
    const SequenceId late = t.add();
    t.feed(late, run_of(12, 0));  // 11 shareable tokens: it needs blocks 0.. (11 - 8) / 4 = 0
    EXPECT_EQ(t.shared_prefix(late), 0u);
    EXPECT_EQ(t.blocks_held(late), 0u);
}

TEST(Scheduler, LaterStagesFollowTheRowsTheStageBeforeRan) {
    Scheduler first(small(16, 4, 8)), later(small(16, 4, 8));
    for (Scheduler* s : {&first, &later}) {
        s->add();
        s->add();
        s->feed(1, run_of(6, 0));
        s->feed(2, run_of(5, 30));
    }
    const StepSchedule chosen = step(first);
    std::vector<StageRows> rows;
    for (const ScheduledSequence& seq : chosen.sequences) {
        rows.push_back(StageRows{seq.id, seq.rows});
    }
    const StepSchedule followed = later.follow(rows, "stage 1");
    EXPECT_EQ(followed.slots, chosen.slots) << "the same calls give the same blocks";
    EXPECT_EQ(followed.ids, chosen.ids);
    later.complete(followed, StepOutcome{});
    EXPECT_EQ(later.position(2), first.position(2));
    const auto error = [&](std::vector<StageRows> bad) { return error_message([&] { later.follow(bad, "stage 1"); }); };
    EXPECT_EQ(error({{2, 9}}), "stage 1: a step of 9 rows of 1 sequences, over the batch's 8 rows of 8 sequences");
    EXPECT_EQ(error({{2, 1}, {2, 1}}), "stage 1: the schedule names sequence 2 twice");
    EXPECT_EQ(error({{2, 4}}), "stage 1: the schedule runs 4 rows of sequence 2, which has 3 tokens pending");
    EXPECT_EQ(error({{2, 0}}), "stage 1: the schedule runs 0 rows of sequence 2, which has 3 tokens pending");
    EXPECT_EQ(error({{7, 1}}), "batch: no sequence 7");
    EXPECT_EQ(later.pending(2), 3u) << "a bad schedule changes nothing";
    // Stages given different calls disagree on room: named, not run.
    Scheduler tight(small(2, 4, 16));
    tight.add();
    tight.feed(1, run_of(8, 0));
    tight.add();
    tight.feed(2, run_of(4, 0));
    const StageRows too_many[] = {{1, 8}, {2, 1}};
    EXPECT_EQ(error_message([&] { tight.follow(too_many, "stage 2"); }),
              "stage 2: room for 0 of the 1 rows of sequence 2 the stage before ran: the stages' batches were not "
              "given the same calls");
}

TEST(Scheduler, PromptChunksFollowTheMeasuredTime) {
    SchedulerOptions o = small(64, 4, 128);
    o.submission_target_ms = 500;
    Scheduler s(o);
    EXPECT_EQ(s.chunk_limit(), 16u) << "the first prompt steps are short";
    const SequenceId id = s.add();
    s.feed(id, run_of(100, 0));
    const StepSchedule first = s.schedule();
    EXPECT_EQ(first.rows(), 16u);
    s.complete(first, StepOutcome{.gpu_ms = 100.0});  // 6.25 ms a row: 80 fit, 64
    EXPECT_EQ(s.chunk_limit(), 64u);
    EXPECT_EQ(step(s).rows(), 64u);
    EXPECT_EQ(s.chunk_limit(), 64u) << "a step nobody timed changes nothing";
    s.complete(s.schedule(), StepOutcome{.gpu_ms = 10000.0});  // the last 20 rows: 500 ms a row
    EXPECT_EQ(s.chunk_limit(), 1u) << "slower rows, shorter chunks, down to one row";
    s.feed(id, run_of(1, 0));
    s.complete(s.schedule(), StepOutcome{.gpu_ms = 0.001});
    EXPECT_EQ(s.chunk_limit(), 1u) << "a step of decode tokens alone says nothing of prompt rows";
    EXPECT_EQ(prompt_chunk_after(100.0, 16, 500, 128), 64u);
    EXPECT_EQ(prompt_chunk_after(4000.0, 16, 500, 128), 2u);
    EXPECT_EQ(prompt_chunk_after(9000.0, 8, 500, 128), 1u);
    EXPECT_EQ(prompt_chunk_after(0.0, 16, 500, 100), 100u);
    o.submission_target_ms = 0;
    EXPECT_EQ(Scheduler(o).chunk_limit(), 128u) << "no target: always the whole chunk";
}

TEST(Scheduler, BadInputIsRefusedAndNothingIsQueued) {
    SchedulerOptions o = small(8, 4, 8);
    o.sequence_limit = 32;
    Scheduler s(o);
    const SequenceId id = s.add();
    EXPECT_EQ(id, 1u) << "ids count up from 1";
    const std::vector<std::uint32_t> too_long(33, 1), bad_id = {1, 100};
    EXPECT_EQ(error_message([&] { s.feed(id, too_long); }),
              "batch: 33 more tokens after 0 exceed a sequence's 32 tokens");
    EXPECT_EQ(error_message([&] { s.feed(id, bad_id); }),
              "batch: token id 100 at input position 1 is not below the vocabulary size 100");
    EXPECT_EQ(error_message([&] { s.feed(id, {}); }), "batch: sequence 1 fed no token ids");
    EXPECT_EQ(error_message([&] { s.feed(id + 1, bad_id); }), "batch: no sequence 2");
    EXPECT_EQ(s.pending(id), 0u);
    EXPECT_TRUE(s.schedule().empty());
    s.remove(id);
    EXPECT_EQ(error_message([&] { s.remove(id); }), "batch: no sequence 1");
    EXPECT_EQ(s.add(), 2u) << "ids are never reused";
    // A step completed twice would count its rows twice.
    const SequenceId next = s.add();
    s.feed(next, run_of(3, 0));
    const StepSchedule once = s.schedule();
    s.complete(once, StepOutcome{});
    EXPECT_EQ(error_message([&] { s.complete(once, StepOutcome{}); }),
              "scheduler: sequence 3 ran from position 0, but has 3 tokens computed");
    // Options it cannot work with.
    EXPECT_THROW(Scheduler(small(0, 4, 8)), Error);
    EXPECT_THROW(Scheduler(small(8, 4, 0)), Error);
    SchedulerOptions short_ring = windowed();
    short_ring.table_blocks = 3;
    EXPECT_EQ(error_message([&] { Scheduler{short_ring}; }), "scheduler: block tables of 3 blocks, but 4 are needed");
}

TEST(Scheduler, ASequenceRemovedBeforeItsStepCompletesIsLeftOut) {
    Scheduler s(small(8, 4, 8));
    const SequenceId a = s.add(), b = s.add();
    s.feed(a, run_of(2, 0));
    s.feed(b, run_of(2, 40));
    const StepSchedule schedule = s.schedule();
    s.remove(a);
    const std::vector<StepProgress> progress = s.complete(schedule, StepOutcome{});
    ASSERT_EQ(progress.size(), 1u);
    EXPECT_EQ(progress[0].id, b);
    EXPECT_TRUE(progress[0].done);
    EXPECT_EQ(s.blocks().used(), 1u);
}

}  // namespace
}  // namespace vkf::test
