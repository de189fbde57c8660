// The prefix cache after a hit, for every decoder family test_batch covers, with f32 and f16
// KV, over chunked prompts (issue 42): a first turn (a 70-token prompt in chunks of 16, then
// decode steps) ends; the next turn, the first turn's tokens and more, takes its whole blocks
// from the cache, and the rows it runs match the float64 reference over the whole sequence
// with the chunks the blocks were computed in (Jais with dynamic alibi_scaling: its keys
// depend on the key count of each chunk, which the cached blocks carry); the next token (greedy)
// is a cold run's. A key window refuses the cache (test_batch_prefix_cache). KV pool and logits
// poisoned, so a cached row read before it was written shows. A randomized run mixes hits,
// misses, evictions and removals mid-prompt, and checks every sequence against its run alone.

#include "host/model/batch.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/model/batch_families.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <span>
#include <vector>

namespace vkf::test {
namespace {

constexpr std::uint32_t kBlock = 16;

using namespace batch_families;

std::uint32_t argmax(std::span<const float> row) {
    return static_cast<std::uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Feeds `ids` and steps until they have all run; the logits of the rows `which` asks for.
std::vector<float> run(Batch& batch, SequenceId id, std::span<const std::uint32_t> ids, Logits which) {
    batch.feed(id, ids, which);
    std::vector<float> logits;
    while (batch.pending(id) > 0) {
        const StepResult r = batch.step();
        EXPECT_TRUE(r.blocked.empty());
        for (const SequenceOutput& out : r.ran) {
            if (out.id == id) {
                logits.insert(logits.end(), out.logits.begin(), out.logits.end());
            }
        }
    }
    return logits;
}

class BatchPrefixFamilies : public VulkanTest {
protected:
    void family(const char* name, const ModelConfig& config, DType kv, double tolerance) {
        SCOPED_TRACE(name);
        const TempDir dir("vkf_test_prefix_families");
        write_random_checkpoint(dir.path(), config, 43, DType::F32);
        const Model model(ctx(), dir.path());
        const auto options = [&](bool cache) {
            return BatchOptions{.max_tokens = 16 * kBlock,
                                .max_sequence_tokens = 128,
                                .max_sequences = 2,
                                .block_size = kBlock,
                                .chunk = 16,
                                .kv_dtype = kv,
                                .cache_prefixes = cache,
                                .poison = true};
        };
        Batch batch(model, options(true));
        const std::uint32_t vocab = config.vocab_size;
        // Turn 1: a prompt in chunks of 16, then 5 greedy tokens a step each.
        std::vector<std::uint32_t> tokens = random_token_ids(70, vocab, 44);
        const SequenceId first = batch.add();
        std::vector<float> last = run(batch, first, tokens, Logits::Last);
        for (int i = 0; i < 5; ++i) {
            tokens.push_back(argmax(last));
            last = run(batch, first, std::span(tokens).last(1), Logits::Last);
        }
        const std::uint32_t computed = batch.position(first);
        batch.remove(first);
        // Turn 2: what turn 1 computed, its last token, and a new question.
        tokens.push_back(argmax(last));
        const std::vector<std::uint32_t> more = random_token_ids(9, vocab, 45);
        tokens.insert(tokens.end(), more.begin(), more.end());
        const SequenceId second = batch.add();
        const std::vector<float> logits = run(batch, second, tokens, Logits::All);
        const std::uint32_t cached = computed / kBlock * kBlock;
        EXPECT_EQ(batch.shared_prefix(second), cached);
        ASSERT_EQ(logits.size(), std::size_t{tokens.size() - cached} * vocab) << "only the rows after the hit run";
        const reference::Model reference(model.config(), model.checkpoint());
        const std::vector<double> ref = reference.forward(tokens, batch.chunk_ends(second));
        double worst = 0.0;
        for (std::uint32_t p = cached; p < tokens.size(); ++p) {
            const ErrorStats e = compare_to_reference(std::span(logits).subspan(std::size_t{p - cached} * vocab, vocab),
                                                      std::span(ref).subspan(std::size_t{p} * vocab, vocab));
            EXPECT_LT(e.max_rel, tolerance) << "position " << p << ": " << describe(e);
            worst = std::max(worst, e.max_rel);
        }
        // A cold run of turn 2 (no cache, its own chunks) picks the same next token; under
        // dynamic scaling its chunks differ from the cached ones, and so may its logits.
        Batch cold(model, options(false));
        const SequenceId alone = cold.add();
        const std::vector<float> cold_last = run(cold, alone, tokens, Logits::Last);
        EXPECT_EQ(argmax(std::span(logits).last(vocab)), argmax(cold_last));
        std::printf("%-26s %s KV: %u of %zu tokens cached, largest relative error %.3g\n", name, to_string(kv), cached,
                    tokens.size(), worst);
        batch.remove(second);
    }
};

TEST_F(BatchPrefixFamilies, Bloom) {
    family("bloom", bloom(), DType::F32, 2e-5);
    family("bloom", bloom(), DType::F16, 2e-3);
}

TEST_F(BatchPrefixFamilies, MptGqaQkLn) {
    family("mpt gqa qk_ln", mpt_gqa(), DType::F16, 2e-3);
}

TEST_F(BatchPrefixFamilies, MptMqaLearnedPositions) {
    family("mpt mqa learned positions", mpt_mqa_positions(), DType::F32, 2e-5);
}

TEST_F(BatchPrefixFamilies, FalconRw) {
    family("falcon-rw", falcon(), DType::F16, 2e-3);
}

TEST_F(BatchPrefixFamilies, Baichuan) {
    family("baichuan", baichuan(), DType::F32, 2e-5);
}

TEST_F(BatchPrefixFamilies, JaisDynamicAlibiScaling) {
    family("jais dynamic alibi_scaling", jais(), DType::F32, 2e-5);
    family("jais dynamic alibi_scaling", jais(), DType::F16, 2e-3);
}

// Sequences join (at most 3 at once), run and leave at random over a pool too small to keep
// every prefix: prompts start with one of 3 preambles cut at random, or share nothing; some
// are removed mid-prompt. Every prompt that ends is checked against the reference of it alone
// (BLOOM: its chunks change nothing), and the run must have had hits, misses and evictions.
TEST_F(BatchPrefixFamilies, RandomHitsMissesEvictionsAndRemovals) {
    const TempDir dir("vkf_test_prefix_random");
    const ModelConfig config = small_bloom();
    write_random_checkpoint(dir.path(), config, 47, DType::F32);
    const Model model(ctx(), dir.path());
    constexpr std::uint32_t kSmall = 8;
    Batch batch(model, BatchOptions{.max_tokens = 26 * kSmall,
                                    .max_sequence_tokens = 64,
                                    .max_sequences = 3,
                                    .block_size = kSmall,
                                    .chunk = 16,
                                    .kv_dtype = DType::F32,
                                    .cache_prefixes = true,
                                    .poison = true});
    const reference::Model reference(model.config(), model.checkpoint());
    std::mt19937 rng(2042);
    const auto uniform = [&](std::uint32_t lo, std::uint32_t hi) {
        return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
    };
    std::vector<std::vector<std::uint32_t>> preambles;
    for (std::uint64_t k = 0; k < 3; ++k) {
        preambles.push_back(random_token_ids(48, config.vocab_size, 100 + k));
    }
    std::map<SequenceId, std::vector<std::uint32_t>> live;  // prompts not ended yet
    std::uint32_t started = 0, checked = 0, removed_early = 0, hits = 0;
    double worst = 0.0;
    while (started < 40 || !live.empty()) {
        if (started < 40 && live.size() < 3 && uniform(0, 2) != 0) {
            std::vector<std::uint32_t> prompt;
            if (uniform(0, 3) != 0) {
                const auto& pre = preambles[uniform(0, 2)];
                prompt.assign(pre.begin(), pre.begin() + uniform(4, 48));
            }
            const std::vector<std::uint32_t> tail = random_token_ids(uniform(1, 12), config.vocab_size, 500 + started);
            prompt.insert(prompt.end(), tail.begin(), tail.end());
            const SequenceId id = batch.add();
            batch.feed(id, prompt, Logits::Last);
            hits += batch.shared_prefix(id) > 0 ? 1 : 0;
            live.emplace(id, std::move(prompt));
            ++started;
        }
        const StepResult r = batch.step();
        ASSERT_TRUE(r.blocked.empty()) << "three live sequences always fit; the cache must give way";
        for (const SequenceOutput& out : r.ran) {
            if (!out.done) {
                continue;
            }
            const std::vector<std::uint32_t>& prompt = live.at(out.id);
            const std::vector<double> ref = reference.forward(prompt);
            const ErrorStats e = compare_to_reference(out.logits, std::span(ref).last(config.vocab_size));
            EXPECT_LT(e.max_rel, 2e-5) << "sequence " << out.id << " of " << prompt.size() << " tokens, "
                                       << batch.shared_prefix(out.id) << " shared: " << describe(e);
            worst = std::max(worst, e.max_rel);
            batch.remove(out.id);
            live.erase(out.id);
            ++checked;
        }
        // Now and then a sequence leaves before its prompt ends (a client gone).
        if (!live.empty() && uniform(0, 9) == 0) {
            auto it = std::next(live.begin(), uniform(0, static_cast<std::uint32_t>(live.size()) - 1));
            if (batch.pending(it->first) > 0) {
                batch.remove(it->first);
                live.erase(it);
                ++removed_early;
            }
        }
    }
    const PrefixCacheStats& stats = batch.prefix_cache()->stats();
    std::printf(
        "%u sequences: %u checked, %u removed mid-prompt, %u took shared or cached blocks; cache: %llu "
        "lookups, %llu hit tokens, %llu evictions; largest relative error %.3g\n",
        started, checked, removed_early, hits, static_cast<unsigned long long>(stats.lookups),
        static_cast<unsigned long long>(stats.hit_tokens), static_cast<unsigned long long>(stats.evictions), worst);
    EXPECT_GT(stats.hit_tokens, 0u);
    EXPECT_GT(stats.evictions, 0u);
    EXPECT_LT(hits, started) << "no misses";
    EXPECT_EQ(batch.blocks().used(), batch.prefix_cache()->reclaimable()) << "only the cache holds blocks now";
}

}  // namespace
}  // namespace vkf::test
