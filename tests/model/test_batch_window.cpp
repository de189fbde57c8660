// Local attention through whole models (BatchOptions::window, issue 30): sequences of a Batch
// and a Session go far past their block ring's capacity (positions count on, the blocks no
// query can see go back to the pool), against the double-precision reference model with the
// same key window (ModelConfig::attention_window), teacher-forced, every position's logits,
// KV pool and logits poisoned. A sequence that shares another's prompt prefix takes only the
// blocks its window still sees; a session without a window stops when its cache is full.

#include "host/model/batch.hpp"
#include "host/model/generation.hpp"
#include "host/model/session.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>

namespace vkf::test {
namespace {

ModelConfig bloom() {
    return ModelConfig{.family = ModelFamily::Bloom,
                       .vocab_size = 311,
                       .hidden = 4 * 24,
                       .n_layer = 2,
                       .n_head = 4,
                       .n_kv_head = 4,
                       .head_dim = 24,
                       .ffn_hidden = 4 * 96};
}

// Grouped-query MPT: the separate QKV passes and GQA under a window.
ModelConfig mpt_gqa() {
    ModelConfig c = bloom();
    c.family = ModelFamily::Mpt;
    c.n_head = 6;
    c.head_dim = 16;
    c.n_kv_head = 2;
    c.qk_ln = true;
    c.ffn_hidden = 200;
    return c;
}

struct Track {
    std::uint32_t prompt = 0, total = 0, join = 0;
    std::uint32_t prefix_of = ~0u, shared = 0;
    std::vector<std::uint32_t> tokens;
    SequenceId id = 0;
    std::uint32_t fed = 0, first_logit = 0, computed = 0;
    std::vector<float> logits;
    bool joined = false, left = false;
};

void expect_matches_reference(const Model& model, std::uint32_t window, const Track& t, double tolerance) {
    ModelConfig windowed = model.config();
    windowed.attention_window = window;
    const reference::Model reference(windowed, model.checkpoint());
    const std::uint32_t vocab = windowed.vocab_size;
    const std::vector<double> ref = reference.forward(std::span(t.tokens).first(t.computed));
    ASSERT_EQ(t.logits.size(), std::size_t{t.computed - t.first_logit} * vocab);
    for (std::uint32_t p = t.first_logit; p < t.computed; ++p) {
        const ErrorStats e =
            compare_to_reference(std::span(t.logits).subspan(std::size_t{p - t.first_logit} * vocab, vocab),
                                 std::span(ref).subspan(std::size_t{p} * vocab, vocab));
        ASSERT_LT(e.max_rel, tolerance) << "position " << p << ": " << describe(e);
    }
}

class BatchWindow : public VulkanTest {
protected:
    // Three sequences with window 20 in rings of 6 blocks of 8 (48 tokens), far past them;
    // the third joins with the first 38 tokens of the first (blocks 2..4 shared, block 4
    // copied on write), after the first freed blocks 0 and 1.
    void run(const ModelConfig& config, DType kv, double tolerance) {
        const std::uint32_t window = 20;
        const TempDir dir("vkf_test_batch_window");
        write_random_checkpoint(dir.path(), config, 59, DType::F32);
        const Model model(ctx(), dir.path());
        Batch batch(model, BatchOptions{.max_tokens = 3 * 48 + 16,
                                        .max_sequences = 4,
                                        .block_size = 8,
                                        .chunk = 16,
                                        .kv_dtype = kv,
                                        .window = window,
                                        .poison = true});
        ASSERT_EQ(batch.blocks_per_seq(), 6u);
        std::vector<Track> tracks = {Track{.prompt = 40, .total = 100}, Track{.prompt = 5, .total = 80, .join = 1},
                                     Track{.prompt = 45, .total = 90, .join = 3, .prefix_of = 0, .shared = 38}};
        const std::uint32_t vocab = config.vocab_size;
        for (std::size_t i = 0; i < tracks.size(); ++i) {
            tracks[i].tokens = random_token_ids(tracks[i].total, vocab, 300 + i);
            if (tracks[i].prefix_of != ~0u) {
                std::copy_n(tracks[tracks[i].prefix_of].tokens.begin(), tracks[i].shared, tracks[i].tokens.begin());
            }
        }
        std::uint32_t most_used = 0;
        for (std::uint32_t step = 0; step < 1000; ++step) {
            for (Track& t : tracks) {
                if (!t.joined && t.join <= step) {
                    t.joined = true;
                    t.id = batch.add();
                    batch.feed(t.id, std::span(t.tokens).first(t.prompt), Logits::All);
                    t.fed = t.prompt;
                    t.first_logit = t.computed = batch.position(t.id);
                }
            }
            const StepResult r = batch.step();
            ASSERT_TRUE(r.blocked.empty()) << "a windowed sequence ran out of blocks at step " << step;
            for (const SequenceOutput& out : r.ran) {
                Track& t = *std::find_if(tracks.begin(), tracks.end(), [&](const Track& x) { return x.id == out.id; });
                t.logits.insert(t.logits.end(), out.logits.begin(), out.logits.end());
                t.computed = out.position;
                ASSERT_LE(batch.blocks_held(t.id), batch.blocks_per_seq());
                if (out.done && t.fed < t.total) {
                    const std::uint32_t next[] = {t.tokens[t.fed++]};
                    batch.feed(t.id, next, Logits::All);
                }
            }
            most_used = std::max(most_used, batch.blocks().used());
            for (Track& t : tracks) {
                if (t.joined && !t.left && t.fed == t.total && batch.pending(t.id) == 0) {
                    if (t.prefix_of != ~0u) {
                        EXPECT_EQ(batch.shared_prefix(t.id), t.shared) << "the windowed prefix was not shared";
                    }
                    batch.remove(t.id);
                    t.left = true;
                }
            }
            if (std::all_of(tracks.begin(), tracks.end(), [](const Track& t) { return t.left; })) {
                break;
            }
        }
        EXPECT_EQ(batch.blocks().used(), 0u) << "blocks still held after every sequence left";
        // Three rings, less the two blocks the third sequence shares with the first.
        EXPECT_LE(most_used, 3 * batch.blocks_per_seq());
        for (const Track& t : tracks) {
            ASSERT_TRUE(t.left);
            ASSERT_GT(t.computed, 48u + window) << "never past the ring";
            expect_matches_reference(model, window, t, tolerance);
        }
    }
};

TEST_F(BatchWindow, BloomPastTheRingMatchesWindowedReference) {
    run(bloom(), DType::F32, 2e-5);
}

TEST_F(BatchWindow, MptGqaFp16KvPastTheRingMatchesWindowedReference) {
    run(mpt_gqa(), DType::F16, 2e-3);
}

// A Session with a window goes on past max_tokens with the blocks of its ring; without one,
// generate() stops at a full cache (StopReason::CacheFull) instead of failing.
TEST_F(BatchWindow, SessionGoesOnWithWindowAndStopsAtFullCacheWithout) {
    const TempDir dir("vkf_test_session_window");
    write_random_checkpoint(dir.path(), bloom(), 61, DType::F32);
    const Model model(ctx(), dir.path());
    const std::uint32_t window = 13;
    Session windowed(model, SessionOptions{.max_tokens = 64, .chunk = 8, .kv_dtype = DType::F32, .window = window});
    Track t{.prompt = 11, .total = 100};
    t.tokens = random_token_ids(t.total, bloom().vocab_size, 7);
    std::vector<float> rows = windowed.forward(std::span(t.tokens).first(t.prompt), Logits::All);
    t.logits = rows;
    std::uint32_t most_blocks = 0;
    for (std::uint32_t p = t.prompt; p < t.total; ++p) {
        const std::uint32_t next[] = {t.tokens[p]};
        rows = windowed.forward(next, Logits::All);
        t.logits.insert(t.logits.end(), rows.begin(), rows.end());
        most_blocks = std::max(most_blocks, windowed.blocks_held());
    }
    t.computed = windowed.position();
    EXPECT_EQ(t.computed, t.total);
    EXPECT_LE(most_blocks, window_ring_blocks(window, 8, 16));
    expect_matches_reference(model, window, t, 2e-5);

    Session full(model, SessionOptions{.max_tokens = 20, .kv_dtype = DType::F32});
    const GenerationResult r = generate(full, std::span(t.tokens).first(5), GenerationOptions{.n_predict = 100});
    EXPECT_EQ(r.stop, StopReason::CacheFull);
    EXPECT_EQ(r.tokens.size(), 16u) << "20 cache rows: 5 prompt tokens, 15 fed back, the 16th sampled";
    EXPECT_EQ(full.position(), 20u);
}

}  // namespace
}  // namespace vkf::test
