// BatchSession (host/model/batch_session.hpp), the one-sequence view of any BatchFront
// (a Session is one over its own Batch), against a Session on the same model: the same
// logits bit for bit (Logits::All, Last, None), positions and chunk ends, over a Batch and
// over a front that returns every step's output one step() late with nothing in between, as
// rank 0's pipelined front over MPI ranks does; the same errors. A seeded random 2-layer MPT
// (GQA), a 13-token prompt in 5-row chunks, KV pool and logits poisoned (BatchOptions::poison).

#include "host/model/batch_generation.hpp"
#include "host/model/batch_session.hpp"
#include "host/model/generation.hpp"
#include "host/model/session.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cstring>
#include <deque>
#include <optional>
#include <string>

namespace vkf::test {
namespace {

// A pipelined front's shape over a Batch: step() starts a step and returns the one before
// (or nothing while one is out), counting its steps as RankZeroBatch does.
class LateFront : public BatchFront {
public:
    explicit LateFront(Batch& batch) : batch_(batch) {}
    SequenceId add(std::uint64_t cache_salt = 0) override { return batch_.add(cache_salt); }
    void feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits) override {
        batch_.feed(id, ids, logits);
    }
    void remove(SequenceId id) override { batch_.remove(id); }
    StepResult step() override {
        if (batch_.has_pending()) {
            out_.push_back(batch_.step());
            stats_.steps += 1;
            if (out_.size() < 2 && batch_.has_pending()) {
                return {};  // one in flight, more to start
            }
        }
        if (out_.empty()) {
            return {};
        }
        StepResult r = std::move(out_.front());
        out_.pop_front();
        return r;
    }
    bool contains(SequenceId id) const override { return batch_.contains(id); }
    const std::vector<std::uint32_t>& chunk_ends(SequenceId id) const override { return batch_.chunk_ends(id); }
    std::uint32_t shared_prefix(SequenceId id) const override { return batch_.shared_prefix(id); }
    const KvBlocks& blocks() const override { return batch_.blocks(); }
    const PrefixCache* prefix_cache() const override { return batch_.prefix_cache(); }
    std::uint32_t max_sequence_tokens() const override { return batch_.max_sequence_tokens(); }
    std::uint32_t window() const override { return batch_.window(); }
    PipelineStats pipeline() const override { return stats_; }

private:
    Batch& batch_;
    std::deque<StepResult> out_;
    PipelineStats stats_;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

class BatchSessionTest : public VulkanTest {};

TEST_F(BatchSessionTest, GivesWhatASessionGives) {
    ModelConfig config = small_mpt(false, std::nullopt);
    config.n_layer = 2;
    config.n_kv_head = 2;
    TempDir dir("vkf_test_batch_session");
    write_random_checkpoint(dir.path(), config, 11, DType::F32, 1);
    const Model model(ctx(), dir.path(), ModelOptions{});
    const SessionOptions options{.max_tokens = 40, .chunk = 5, .kv_dtype = DType::F32};
    const std::vector<std::uint32_t> prompt = random_token_ids(13, config.vocab_size, 3);

    for (const bool late : {false, true}) {
        SCOPED_TRACE(late ? "a front one step late" : "a Batch");
        Session expected(model, options);
        BatchOptions batch_options = session_batch_options(options);
        batch_options.poison = true;
        Batch batch(model, batch_options);
        LateFront late_front(batch);
        BatchFront& front = late ? static_cast<BatchFront&>(late_front) : batch;
        BatchSession session(front, model.config(), options);
        for (int round = 0; round < 2; ++round) {
            std::vector<std::size_t> progress;
            const auto on_chunk = [&](std::size_t done, std::size_t) { progress.push_back(done); };
            EXPECT_TRUE(
                same_bits(session.forward(prompt, Logits::All, on_chunk), expected.forward(prompt, Logits::All)));
            EXPECT_EQ(progress, (std::vector<std::size_t>{5, 10, 13}));
            const std::uint32_t next[] = {7};
            EXPECT_TRUE(same_bits(session.forward(next), expected.forward(next)));
            EXPECT_TRUE(session.forward(next, Logits::None).empty());
            expected.forward(next, Logits::None);
            EXPECT_TRUE(same_bits(session.forward(prompt, Logits::Last), expected.forward(prompt, Logits::Last)));
            EXPECT_EQ(session.position(), expected.position());
            EXPECT_EQ(session.chunk_ends(), expected.chunk_ends());
            // The same refusals, in the same words, and nothing fed.
            const std::uint32_t bad[] = {3, config.vocab_size};
            EXPECT_EQ(error_of([&] { session.forward(bad); }), error_of([&] { expected.forward(bad); }));
            EXPECT_EQ(error_of([&] { session.forward({}); }), error_of([&] { expected.forward({}); }));
            const std::vector<std::uint32_t> over(options.max_tokens - session.position() + 1, 1);
            EXPECT_EQ(error_of([&] { session.forward(over); }), error_of([&] { expected.forward(over); }));
            EXPECT_NE(error_of([&] { session.forward(over); }), "no error");
            session.reset();
            expected.reset();
            EXPECT_EQ(session.position(), 0u);
        }
        // generate() over it: the same greedy ids and kept logits.
        const GenerationOptions gen{.n_predict = 5, .keep_logits = true};
        const GenerationResult a = generate(session, prompt, gen);
        const GenerationResult b = generate(expected, prompt, gen);
        EXPECT_EQ(a.tokens, b.tokens);
        EXPECT_TRUE(same_bits(a.logits, b.logits));
    }
}

// generate() is one generation of BatchGenerator over the session's sequence (resume): the
// prompt's chunks reported, the sequence kept in the front when it ends, a full cache ending
// it with CacheFull where generate() always ended it, and the position the tokens fed.
TEST_F(BatchSessionTest, GenerateResumesTheSequenceUntilTheCacheIsFull) {
    ModelConfig config = small_mpt(false, std::nullopt);
    config.n_layer = 2;
    TempDir dir("vkf_test_batch_session_generate");
    write_random_checkpoint(dir.path(), config, 12, DType::F32, 1);
    const Model model(ctx(), dir.path(), ModelOptions{});
    const SessionOptions options{.max_tokens = 20, .chunk = 5, .kv_dtype = DType::F32};
    const std::vector<std::uint32_t> prompt = random_token_ids(13, config.vocab_size, 4);
    for (const bool late : {false, true}) {
        SCOPED_TRACE(late ? "a front one step late" : "a Batch");
        Batch batch(model, session_batch_options(options));
        LateFront late_front(batch);
        BatchFront& front = late ? static_cast<BatchFront&>(late_front) : batch;
        BatchSession session(front, model.config(), options);
        std::vector<std::size_t> progress;
        GenerationOptions gen{.n_predict = 10};
        gen.on_prefill = [&](std::size_t done, std::size_t) { progress.push_back(done); };
        const GenerationResult r = generate(session, prompt, gen);
        EXPECT_EQ(progress, (std::vector<std::size_t>{5, 10, 13}));
        // Positions 13..19 take the first 7 tokens; the 8th is sampled at 20, a full cache.
        EXPECT_EQ(r.tokens.size(), 8u);
        EXPECT_EQ(r.stop, StopReason::CacheFull);
        EXPECT_EQ(session.position(), 20u);
        EXPECT_EQ(r.position, 20u);
        EXPECT_TRUE(front.contains(session.sequence())) << "the session's sequence stays";
        EXPECT_NE(error_of([&] { generate(session, prompt, {.n_predict = 1}); }), "no error") << "no room left";

        BatchGenerator generator(front);
        EXPECT_NE(error_of([&] { generator.resume(session.sequence() + 100, prompt, {}); }), "no error")
            << "not a sequence of the front";
        session.reset();
        generator.resume(session.sequence(), std::span(prompt).first(3), {.n_predict = 2});
        EXPECT_NE(error_of([&] { generator.resume(session.sequence(), prompt, {}); }), "no error") << "already running";
        EXPECT_EQ(generator.run().at(session.sequence()).tokens.size(), 2u);
        EXPECT_TRUE(front.contains(session.sequence()));
    }
}

}  // namespace
}  // namespace vkf::test
