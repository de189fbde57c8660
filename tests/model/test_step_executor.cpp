// StepExecutor (host/model/step_executor.hpp) driven directly, without a Scheduler, by
// schedules written by hand: two steps of three sequences with ragged rows, one of them
// sharing another's first blocks through a copy on write, against the double-precision
// reference model (host/reference/model.hpp) on each sequence alone. The KV pool and the
// logits are poisoned before the run (ExecutorOptions::poison), so a key read before it was
// written, a block not copied or a logit row never written shows as NaN. Also: the same
// schedules over two stages of a layer split (the first returns hidden rows, the second takes
// them), and the schedules run() refuses.

#include "host/model/step_executor.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

namespace vkf::test {
namespace {

const std::uint32_t kVocab = small_bloom().vocab_size;
constexpr std::uint32_t kBlockSize = 4;

ExecutorOptions options() {
    return ExecutorOptions{.decoder = {.kv_dtype = DType::F32, .block_size = kBlockSize, .blocks_per_seq = 4},
                           .blocks = 8,
                           .max_rows = 16,
                           .max_sequences = 4,
                           .poison = true};
}

// A sequence's entry and rows, appended to `s`: `tokens` from `position` on, in `blocks`,
// the logits of the rows `logits` says (true: all, false: the last).
void add_rows(StepSchedule& s, SequenceId id, std::uint32_t position, std::span<const std::uint32_t> tokens,
              std::vector<std::uint32_t> blocks, bool all_logits) {
    ScheduledSequence q{.id = id,
                        .q_start = s.rows(),
                        .rows = static_cast<std::uint32_t>(tokens.size()),
                        .position = position,
                        .blocks = std::move(blocks)};
    for (std::uint32_t i = 0; i < q.rows; ++i) {
        const std::uint32_t p = position + i;
        if (all_logits || i + 1 == q.rows) {
            s.logit_rows.push_back(s.rows());
            ++q.logit_rows;
        }
        s.ids.push_back(tokens[i]);
        s.positions.push_back(p);
        s.slots.push_back(q.blocks[p / kBlockSize] * kBlockSize + p % kBlockSize);
    }
    s.max_q_len = std::max(s.max_q_len, q.rows);
    s.sequences.push_back(std::move(q));
}

struct Tokens {
    std::vector<std::uint32_t> a = random_token_ids(7, kVocab, 11);
    std::vector<std::uint32_t> b = random_token_ids(4, kVocab, 12);
    std::vector<std::uint32_t> c = [this] {
        std::vector<std::uint32_t> ids(a.begin(), a.begin() + 6);  // a's first six, then its own two
        const std::vector<std::uint32_t> own = random_token_ids(2, kVocab, 13);
        ids.insert(ids.end(), own.begin(), own.end());
        return ids;
    }();
};

// Step 1: A's 6 prompt rows in blocks 0 and 1 (all logits), B's 3 in block 2 (the last's).
StepSchedule first_step(const Tokens& t) {
    StepSchedule s;
    add_rows(s, 1, 0, std::span(t.a).first(6), {0, 1}, true);
    add_rows(s, 2, 0, std::span(t.b).first(3), {2}, false);
    return s;
}

// Step 2: block 1 (A's keys 4 and 5, half full) copied into block 3 for C, which holds A's
// first six tokens in blocks 0 and 3 and writes its own two after them; A and B decode one
// token each.
StepSchedule second_step(const Tokens& t) {
    StepSchedule s;
    s.copies = {BlockCopy{.from = 1, .to = 3}};
    add_rows(s, 1, 6, std::span(t.a).subspan(6), {0, 1}, true);
    add_rows(s, 2, 3, std::span(t.b).subspan(3), {2}, true);
    add_rows(s, 3, 6, std::span(t.c).subspan(6), {0, 3}, true);
    return s;
}

// Rows `first` .. of `got` ([rows, vocab]) against the reference's rows of `ids` from `position`.
void expect_rows(const reference::Model& reference, std::span<const std::uint32_t> ids, std::span<const float> got,
                 std::uint32_t position, const std::string& what) {
    const std::vector<double> ref = reference.forward(ids);
    const std::size_t rows = got.size() / kVocab;
    ASSERT_EQ(got.size(), rows * kVocab) << what;
    for (std::size_t r = 0; r < rows; ++r) {
        const ErrorStats e = compare_to_reference(got.subspan(r * kVocab, kVocab),
                                                  std::span(ref).subspan((position + r) * kVocab, kVocab));
        EXPECT_LT(e.max_rel, 2e-5) << what << ", position " << position + r << ": " << describe(e);
    }
}

class StepExecutor_ : public VulkanTest {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        write_random_checkpoint(dir_.path(), small_bloom(), 61, DType::F32);
    }
    TempDir dir_{"vkf_test_step_executor"};
    Tokens tokens_;
};

TEST_F(StepExecutor_, HandMadeSchedulesMatchEachSequenceAlone) {
    const Model model(ctx(), dir_.path());
    StepExecutor executor(model, options());
    const Tokens& t = tokens_;
    const StepOutput one = executor.run(first_step(t));
    ASSERT_EQ(one.logits.size(), 7u * kVocab);
    EXPECT_TRUE(one.hidden.empty()) << "a model with the head returned hidden rows";
    const StepOutput two = executor.run(second_step(t));
    ASSERT_EQ(two.logits.size(), 4u * kVocab);
    EXPECT_EQ(executor.stats().block_copies, 1u);
    EXPECT_EQ(executor.stats().submissions, 2u);

    const reference::Model reference(model.config(), model.checkpoint());
    const auto rows = [](const StepOutput& out, std::size_t first, std::size_t n) {
        return std::span(out.logits).subspan(first * kVocab, n * kVocab);
    };
    expect_rows(reference, std::span(t.a).first(6), rows(one, 0, 6), 0, "A's prompt");
    expect_rows(reference, std::span(t.b).first(3), rows(one, 6, 1), 2, "B's prompt");
    expect_rows(reference, t.a, rows(two, 0, 1), 6, "A's decode step");
    expect_rows(reference, t.b, rows(two, 1, 1), 3, "B's decode step");
    expect_rows(reference, t.c, rows(two, 2, 2), 6, "C after the copied block");

    // The plan of the recorded step is the one DecoderPlan makes, attention included.
    const StepShape shape = executor.shape(second_step(t));
    ASSERT_NE(executor.plan(shape), nullptr);
    EXPECT_EQ(executor.plan(shape)->attention.describe(),
              plan_decoder_step(ctx(), model, options().decoder, shape).attention.describe());

    // Without the copy, block 4 is still poisoned: the copy above is what made C right.
    StepSchedule uncopied;
    add_rows(uncopied, 4, 6, std::span(t.c).subspan(6, 1), {0, 4}, true);
    const StepOutput nan = executor.run(uncopied);
    EXPECT_TRUE(std::any_of(nan.logits.begin(), nan.logits.end(), [](float x) { return std::isnan(x); }))
        << "keys read from a block never written are not NaN: the poison shows nothing";
}

TEST_F(StepExecutor_, StagesOfALayerSplitHandOnHiddenRows) {
    const Model first(ctx(), dir_.path(), ModelOptions{.layers = LayerRange{0, 1}});
    const Model last(ctx(), dir_.path(), ModelOptions{.layers = LayerRange{1, 2}});
    StepExecutor head_less(first, options()), head(last, options());
    const Tokens& t = tokens_;
    const reference::Model reference(first.config(), first.checkpoint());
    std::uint32_t step = 0;
    for (const StepSchedule& s : {first_step(t), second_step(t)}) {
        SCOPED_TRACE(++step);
        const StepOutput upstream = head_less.run(s);
        EXPECT_TRUE(upstream.logits.empty()) << "a stage without the head returned logits";
        ASSERT_EQ(upstream.hidden.size(), std::size_t{s.rows()} * small_bloom().hidden);
        EXPECT_THROW(head.run(s), Error) << "a later stage ran without the hidden rows";
        const StepOutput out = head.run(s, upstream.hidden);
        ASSERT_EQ(out.logits.size(), s.logit_rows.size() * kVocab);
        const std::size_t last_row = s.logit_rows.size() - 1;
        const std::span<const std::uint32_t> ids = step == 1 ? std::span(t.b).first(3) : std::span(t.c);
        expect_rows(reference, ids, std::span(out.logits).subspan(last_row * kVocab), ids.size() - 1, "last row");
    }
}

TEST_F(StepExecutor_, RefusesSchedulesItCannotRun) {
    const Model model(ctx(), dir_.path());
    StepExecutor executor(model, options());
    const Tokens& t = tokens_;
    const std::pair<const char*, std::function<void(StepSchedule&)>> cases[] = {
        {"no rows", [](StepSchedule& s) { s = StepSchedule{}; }},
        {"a slot outside the block table", [](StepSchedule& s) { s.slots[7] = 31; }},
        {"a position that is not the sequence's", [](StepSchedule& s) { s.positions[0] = 3; }},
        {"a block past the pool", [](StepSchedule& s) { s.sequences[0].blocks[1] = 8; }},
        {"a token past the vocabulary", [](StepSchedule& s) { s.ids[2] = kVocab; }},
        {"rows that do not tile the step", [](StepSchedule& s) { s.sequences[1].q_start = 5; }},
        {"logit rows out of order", [](StepSchedule& s) { std::swap(s.logit_rows[0], s.logit_rows[1]); }},
        {"a logit row another sequence owns", [](StepSchedule& s) { s.logit_rows.back() = 5; }},
        {"a wrong max_q_len", [](StepSchedule& s) { s.max_q_len = 2; }},
        {"a copy past the pool", [](StepSchedule& s) { s.copies = {BlockCopy{.from = 1, .to = 8}}; }},
        {"more rows than a step holds",
         [&t](StepSchedule& s) {
             s = StepSchedule{};
             std::vector<std::uint32_t> many(17, t.a[0]);
             add_rows(s, 1, 0, many, {0, 1, 2, 3, 4}, false);
         }},
    };
    for (const auto& [what, spoil] : cases) {
        StepSchedule s = first_step(t);
        spoil(s);
        EXPECT_THROW(executor.run(s), Error) << what;
    }
    EXPECT_THROW(executor.run(first_step(t), std::vector<float>(9 * small_bloom().hidden)), Error)
        << "hidden rows given to the first stage";
    EXPECT_EQ(executor.stats().submissions, 0u) << "a refused schedule was submitted";
    EXPECT_EQ(executor.stats().block_copies, 0u);
}

}  // namespace
}  // namespace vkf::test
