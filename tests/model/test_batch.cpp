// Many sequences in one Batch (continuous batching over the paged KV cache) against the
// double-precision reference model run on each sequence alone (host/reference/model.hpp),
// teacher-forced: every sequence's logits at every position it computed, for batches that
// mix a 600-token prompt with single decode tokens, sequences joining and leaving mid-run,
// shared prompt prefixes (copy on write), a pool too small for everyone (blocks exhausted,
// then refilled once a sequence leaves), every decoder family, fp32/fp16/q8_0/q4_0 weights and
// fp32/fp16 KV caches. The KV pool and the logits are poisoned (BatchOptions::poison). Greedy
// generation of a BatchGenerator gives the ids a Session gives each prompt alone.

#include "host/model/batch_generation.hpp"
#include "host/model/session.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/model/batch_families.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace vkf::test {
namespace {

using namespace batch_families;

// One sequence of a scenario: all its tokens (prompt, then teacher-forced ones fed one a
// step), when it joins and leaves.
struct Track {
    std::uint32_t prompt = 0;
    std::uint32_t total = 0;
    std::uint32_t join = 0;         // step at which it is added and fed its prompt
    std::uint32_t leave = ~0u;      // step after which it is removed (~0: when done)
    std::uint32_t prefix_of = ~0u;  // its first `shared` tokens are those of that track
    std::uint32_t shared = 0;
    // Filled by the run.
    std::vector<std::uint32_t> tokens;
    SequenceId id = 0;
    std::uint32_t fed = 0;
    std::uint32_t first_logit = 0;  // positions before it came from another sequence's blocks
    std::vector<float> logits;      // rows first_logit .. computed - 1
    std::vector<std::uint32_t> chunk_ends;
    std::uint32_t computed = 0;
    bool joined = false, left = false;
};

struct Scenario {
    const char* name;
    std::vector<Track> tracks;
    BatchOptions options;
    // Removes the youngest blocked sequence when a step runs nothing (blocks exhausted).
    bool expect_blocking = false;
};

// Runs the scenario; returns the steps that reported blocked sequences.
std::uint32_t run_scenario(const Model& model, Scenario& s) {
    const std::uint32_t vocab = model.config().vocab_size;
    for (std::size_t i = 0; i < s.tracks.size(); ++i) {
        Track& t = s.tracks[i];
        t.tokens = random_token_ids(t.total, vocab, 1000 + i);
        if (t.prefix_of != ~0u) {
            const Track& base = s.tracks[t.prefix_of];
            std::copy_n(base.tokens.begin(), t.shared, t.tokens.begin());
        }
    }
    Batch batch(model, s.options);
    std::uint32_t blocked_steps = 0;
    for (std::uint32_t step = 0; step < 2000; ++step) {
        for (Track& t : s.tracks) {
            if (!t.joined && t.join <= step) {
                t.joined = true;
                t.id = batch.add();
                batch.feed(t.id, std::span(t.tokens).first(t.prompt), Logits::All);
                t.fed = t.prompt;
                t.first_logit = batch.position(t.id);
                t.computed = t.first_logit;
            }
        }
        const StepResult r = batch.step();
        blocked_steps += r.blocked.empty() ? 0 : 1;
        for (const SequenceOutput& out : r.ran) {
            Track& t = *std::find_if(s.tracks.begin(), s.tracks.end(), [&](const Track& x) { return x.id == out.id; });
            EXPECT_EQ(out.logits.size(), std::size_t{out.tokens} * vocab);
            t.logits.insert(t.logits.end(), out.logits.begin(), out.logits.end());
            t.computed = out.position;
            t.chunk_ends = batch.chunk_ends(t.id);
            if (out.done && t.fed < t.total) {
                const std::uint32_t next[] = {t.tokens[t.fed++]};
                batch.feed(t.id, next, Logits::All);
            }
        }
        if (r.ran.empty() && !r.blocked.empty()) {
            // Nothing could run: the youngest blocked sequence leaves; what the others
            // computed stays.
            const SequenceId youngest = *std::max_element(r.blocked.begin(), r.blocked.end());
            Track& t =
                *std::find_if(s.tracks.begin(), s.tracks.end(), [&](const Track& x) { return x.id == youngest; });
            batch.remove(t.id);
            t.left = true;
        }
        for (Track& t : s.tracks) {
            const bool done = t.joined && !t.left && t.fed == t.total && batch.pending(t.id) == 0;
            if (t.joined && !t.left && (done || step >= t.leave)) {
                batch.remove(t.id);
                t.left = true;
            }
        }
        if (std::all_of(s.tracks.begin(), s.tracks.end(), [](const Track& t) { return t.left; })) {
            EXPECT_EQ(batch.blocks().used(), 0u) << "blocks still held after every sequence left";
            return blocked_steps;
        }
    }
    ADD_FAILURE() << "the scenario did not end";
    return blocked_steps;
}

// Every track's logits against the reference on that track alone, in the chunks it ran in.
double check_scenario(const Model& model, const Scenario& s, double tolerance,
                      const reference::ModelOptions& ref_options = {}) {
    const std::uint32_t vocab = model.config().vocab_size;
    const reference::Model reference(model.config(), model.checkpoint(), ref_options);
    double worst = 0.0;
    for (std::size_t i = 0; i < s.tracks.size(); ++i) {
        const Track& t = s.tracks[i];
        SCOPED_TRACE(std::string(s.name) + ", sequence " + std::to_string(i));
        if (t.computed == 0) {
            continue;
        }
        const auto ids = std::span(t.tokens).first(t.computed);
        const std::vector<double> ref = reference.forward(ids, t.chunk_ends);
        EXPECT_EQ(t.logits.size(), std::size_t{t.computed - t.first_logit} * vocab);
        for (std::uint32_t p = t.first_logit; p < t.computed && (p - t.first_logit + 1) * vocab <= t.logits.size();
             ++p) {
            const ErrorStats e =
                compare_to_reference(std::span(t.logits).subspan(std::size_t{p - t.first_logit} * vocab, vocab),
                                     std::span(ref).subspan(std::size_t{p} * vocab, vocab));
            EXPECT_LT(e.max_rel, tolerance) << "position " << p << ": " << describe(e);
            worst = std::max(worst, e.max_rel);
        }
    }
    return worst;
}

// A 600-token prompt run in chunks while short sequences decode beside it; one joins late and
// shares the first 40 tokens of another (a partial block: copied on write); one leaves early.
Scenario mixed(DType kv) {
    Scenario s{.name = "mixed"};
    s.tracks = {Track{.prompt = 600, .total = 603},
                Track{.prompt = 1, .total = 24},
                Track{.prompt = 45, .total = 60, .join = 2},
                Track{.prompt = 7, .total = 40, .join = 1, .leave = 9},
                Track{.prompt = 50, .total = 58, .join = 6, .prefix_of = 2, .shared = 40},
                Track{.prompt = 13, .total = 20, .join = 12}};
    s.options = BatchOptions{.max_tokens = 1024,
                             .max_sequence_tokens = 640,
                             .max_sequences = 8,
                             .chunk = 96,
                             .kv_dtype = kv,
                             .poison = true};
    return s;
}

// Room for two sequences' prompts but not their growth: a step reports blocked sequences,
// the youngest leaves, and the others finish in the blocks it freed.
Scenario exhausted() {
    Scenario s{.name = "blocks exhausted"};
    s.tracks = {Track{.prompt = 30, .total = 70}, Track{.prompt = 20, .total = 60}, Track{.prompt = 9, .total = 50}};
    s.options = BatchOptions{.max_tokens = 128,
                             .max_sequence_tokens = 80,
                             .max_sequences = 4,
                             .block_size = 8,
                             .chunk = 64,
                             .kv_dtype = DType::F32,
                             .poison = true};
    s.expect_blocking = true;
    return s;
}

class Batch_ : public VulkanTest {
protected:
    void family(const char* name, const ModelConfig& config, DType weights, DType kv, double tolerance) {
        SCOPED_TRACE(name);
        const TempDir dir("vkf_test_batch");
        write_random_checkpoint(dir.path(), config, 41, weights);
        const Model model(ctx(), dir.path());
        Scenario s = mixed(kv);
        run_scenario(model, s);
        const double worst =
            check_scenario(model, s, tolerance, reference::ModelOptions{.round_weights_to_f16 = weights == DType::F16});
        std::printf("%-34s %s weights, %s KV: largest relative logit error %.3g\n", name, to_string(weights),
                    to_string(kv), worst);
    }
};

TEST_F(Batch_, BloomMixedBatchMatchesEachSequenceAlone) {
    family("bloom", bloom(), DType::F32, DType::F32, 2e-5);
}

TEST_F(Batch_, BloomFp16MixedBatchMatchesEachSequenceAlone) {
    family("bloom", bloom(), DType::F16, DType::F16, 2e-3);
}

TEST_F(Batch_, MptGqaQkLnMixedBatchMatchesEachSequenceAlone) {
    family("mpt gqa qk_ln", mpt_gqa(), DType::F32, DType::F16, 2e-3);
}

TEST_F(Batch_, FullEveryFamily) {
    family("mpt mqa learned positions", mpt_mqa_positions(), DType::F32, DType::F32, 2e-5);
    family("falcon-rw", falcon(), DType::F16, DType::F16, 2e-3);
    family("baichuan", baichuan(), DType::F32, DType::F32, 2e-5);
    family("jais", jais(), DType::F32, DType::F16, 2e-3);
    family("mpt gqa qk_ln", mpt_gqa(), DType::F16, DType::F32, 2e-3);
}

TEST_F(Batch_, QuantizedWeights) {
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        SCOPED_TRACE(to_string(f));
        const TempDir dir("vkf_test_batch_q");
        write_random_checkpoint(dir.path(), bloom(), 43, DType::F16);
        const Model model(ctx(), dir.path(), ModelOptions{.weights = WeightFormat{.dense = DType::F16, .quant = f}});
        Scenario s = mixed(DType::F16);
        s.tracks.resize(3);
        s.tracks[0].prompt = 200;
        s.tracks[0].total = 203;
        run_scenario(model, s);
        // Against the reference on the exact dequantized weights (test_quantized_model).
        check_scenario(model, s, 2e-3, reference::ModelOptions{.round_weights_to_f16 = true, .quantize = f});
    }
}

TEST_F(Batch_, BlocksExhaustedThenRefilled) {
    const TempDir dir("vkf_test_batch");
    write_random_checkpoint(dir.path(), bloom(), 47, DType::F32);
    const Model model(ctx(), dir.path());
    Scenario s = exhausted();
    EXPECT_GT(run_scenario(model, s), 0u) << "the pool never ran out: the scenario tests nothing";
    EXPECT_TRUE(std::any_of(s.tracks.begin(), s.tracks.end(), [](const Track& t) { return t.computed < t.total; }))
        << "every sequence finished: none was made to leave";
    check_scenario(model, s, 2e-5);
}

TEST_F(Batch_, SharedPrefixIsStoredOnceAndCopiedOnWrite) {
    const TempDir dir("vkf_test_batch");
    write_random_checkpoint(dir.path(), bloom(), 53, DType::F32);
    const Model model(ctx(), dir.path());
    Batch batch(model, BatchOptions{.max_tokens = 512, .kv_dtype = DType::F32, .poison = true});
    const std::vector<std::uint32_t> system = random_token_ids(37, 523, 7);  // 2 blocks and 5 tokens
    std::vector<std::uint32_t> a = system, b = system;
    const std::vector<std::uint32_t> a_tail = random_token_ids(9, 523, 8), b_tail = random_token_ids(4, 523, 9);
    a.insert(a.end(), a_tail.begin(), a_tail.end());
    b.insert(b.end(), b_tail.begin(), b_tail.end());
    const SequenceId first = batch.add();
    batch.feed(first, a, Logits::Last);
    batch.step();
    const std::uint32_t used_alone = batch.blocks().used();
    const SequenceId second = batch.add();
    batch.feed(second, b, Logits::Last);
    EXPECT_EQ(batch.shared_prefix(second), 37u);
    const StepResult r = batch.step();
    ASSERT_EQ(r.ran.size(), 1u);
    EXPECT_EQ(r.ran[0].tokens, 4u) << "the shared prompt was computed again";
    EXPECT_EQ(batch.stats().block_copies, 1u) << "the partly filled shared block was not copied";
    EXPECT_EQ(batch.blocks().used(), used_alone + 1) << "the shared blocks are not stored once";
    const reference::Model reference(model.config(), model.checkpoint());
    const std::vector<double> ref = reference.forward(b);
    const ErrorStats e = compare_to_reference(r.ran[0].logits, std::span(ref).last(523));
    EXPECT_LT(e.max_rel, 2e-5) << describe(e);
    // The first sequence goes on unharmed by the second's writes.
    const std::uint32_t next[] = {5};
    batch.feed(first, next, Logits::Last);
    const StepResult r2 = batch.step();
    a.push_back(5);
    const std::vector<double> ref_a = reference.forward(a, batch.chunk_ends(first));
    const ErrorStats e2 = compare_to_reference(r2.ran.at(0).logits, std::span(ref_a).last(523));
    EXPECT_LT(e2.max_rel, 2e-5) << describe(e2);
}

// Over a q8_0 K / q4_0 V cache (pools of different block sizes): the shared prefix's partly
// filled block copied as stored gives the second sequence the logits its prompt gives alone,
// and the first sequence goes on as it would alone. A copy of the wrong bytes (K's block size
// for V, say) would read another sequence's or unwritten (NaN-poisoned) rows.
TEST_F(Batch_, QuantizedKvSharedPrefixIsCopiedAsStored) {
    const TempDir dir("vkf_test_batch");
    write_random_checkpoint(dir.path(), bloom(), 54, DType::F32);
    const Model model(ctx(), dir.path());
    const BatchOptions options{.max_tokens = 512,
                               .kv_dtype = DType::F16,
                               .kv_k_quant = QuantFormat::Q8_0,
                               .kv_v_quant = QuantFormat::Q4_0,
                               .poison = true};
    const std::vector<std::uint32_t> system = random_token_ids(37, 523, 17);
    std::vector<std::uint32_t> a = system, b = system;
    const std::vector<std::uint32_t> a_tail = random_token_ids(9, 523, 18), b_tail = random_token_ids(4, 523, 19);
    a.insert(a.end(), a_tail.begin(), a_tail.end());
    b.insert(b.end(), b_tail.begin(), b_tail.end());
    // Each prompt alone, in the same chunks as below.
    const auto alone = [&](const std::vector<std::uint32_t>& first, std::span<const std::uint32_t> then) {
        Batch own(model, options);
        const SequenceId id = own.add();
        own.feed(id, first, Logits::Last);
        std::vector<float> logits = own.step().ran.at(0).logits;
        if (!then.empty()) {
            own.feed(id, then, Logits::Last);
            logits = own.step().ran.at(0).logits;
        }
        return logits;
    };
    Batch batch(model, options);
    const SequenceId first = batch.add();
    batch.feed(first, a, Logits::Last);
    batch.step();
    const SequenceId second = batch.add();
    batch.feed(second, b, Logits::Last);
    EXPECT_EQ(batch.shared_prefix(second), 37u);
    const StepResult r = batch.step();
    ASSERT_EQ(r.ran.size(), 1u);
    EXPECT_EQ(batch.stats().block_copies, 1u);
    const std::vector<float> b_alone = alone(system, b_tail);
    const ErrorStats e = compare_to_reference(r.ran[0].logits, std::vector<double>(b_alone.begin(), b_alone.end()));
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX);
    EXPECT_LT(e.max_rel, 1e-4) << describe(e);
    const std::uint32_t next[] = {5};
    batch.feed(first, next, Logits::Last);
    const StepResult r2 = batch.step();
    const std::vector<float> a_alone = alone(a, next);
    const ErrorStats e2 =
        compare_to_reference(r2.ran.at(0).logits, std::vector<double>(a_alone.begin(), a_alone.end()));
    EXPECT_EQ(e2.first_nonfinite, SIZE_MAX);
    EXPECT_LT(e2.max_rel, 1e-4) << describe(e2);
}

TEST_F(Batch_, GreedyGenerationsGiveTheIdsEachPromptGivesAlone) {
    const TempDir dir("vkf_test_batch");
    write_random_checkpoint(dir.path(), bloom(), 59, DType::F16);
    const Model model(ctx(), dir.path());
    const std::vector<std::uint32_t> lengths = {1, 17, 5, 64, 2};
    std::vector<std::vector<std::uint32_t>> prompts;
    std::vector<std::vector<std::uint32_t>> alone;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        prompts.push_back(random_token_ids(lengths[i], 523, 60 + i));
        Session session(model, SessionOptions{.max_tokens = 96});
        alone.push_back(
            generate(session, prompts.back(), GenerationOptions{.n_predict = 12 + 3 * std::uint32_t(i)}).tokens);
    }
    Batch batch(model, BatchOptions{.max_tokens = 512, .max_sequence_tokens = 96, .poison = true});
    BatchGenerator generator(batch);
    std::map<SequenceId, std::size_t> which;
    std::map<std::size_t, GenerationResult> results;
    // Two join at once, the others one step apart while the first ones decode.
    for (std::size_t i = 0; i < prompts.size() || generator.busy();) {
        if (i < prompts.size()) {
            which[generator.submit(prompts[i], GenerationOptions{.n_predict = 12 + 3 * std::uint32_t(i)})] = i;
            ++i;
            if (i == 1) {
                continue;
            }
        }
        for (auto& [id, result] : generator.step()) {
            results[which.at(id)] = std::move(result);
        }
    }
    ASSERT_EQ(results.size(), prompts.size());
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_EQ(results[i].tokens, alone[i]) << "prompt " << i;
        EXPECT_EQ(results[i].stop, StopReason::Length);
    }
    EXPECT_EQ(batch.size(), 0u);
}

TEST_F(Batch_, BadInputIsRefusedAndNothingIsQueued) {
    const TempDir dir("vkf_test_batch");
    write_random_checkpoint(dir.path(), bloom(), 61, DType::F32);
    const Model model(ctx(), dir.path());
    Batch batch(model, BatchOptions{.max_tokens = 64, .max_sequence_tokens = 32});
    const SequenceId id = batch.add();
    const std::vector<std::uint32_t> too_long(33, 1), bad_id = {1, 523};
    EXPECT_THROW(batch.feed(id, too_long), Error);
    EXPECT_THROW(batch.feed(id, bad_id), Error);
    EXPECT_THROW(batch.feed(id, std::span<const std::uint32_t>()), Error);
    EXPECT_THROW(batch.feed(id + 1, bad_id), Error);
    EXPECT_EQ(batch.pending(id), 0u);
    EXPECT_TRUE(batch.step().ran.empty());
    batch.remove(id);
    EXPECT_THROW(batch.remove(id), Error);
    EXPECT_THROW(Batch(model, BatchOptions{.max_tokens = 0}), Error);
    EXPECT_THROW(Batch(model, BatchOptions{.max_tokens = 64, .kv_dtype = DType::BF16}), Error);
}

// The portable paths: phone limits (small workgroups and shared memory, a 256 KiB
// maxStorageBufferRange: weights bound in row ranges) with the mixed batch.
TEST(BatchForcedLimits, MixedBatchUnderPhoneLimits) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("phone,storage_buffer_range=256K")));
    const TempDir dir("vkf_test_batch");
    ModelConfig gqa = mpt_gqa();
    gqa.qk_ln = false;  // the fused QKV scatter where phone limits allow it
    write_random_checkpoint(dir.path(), gqa, 67, DType::F32);
    const Model model(ctx, dir.path());
    Scenario s = mixed(DType::F16);
    s.options.max_tokens = 640;  // one layer's pool within 256 KiB
    s.tracks[0].prompt = 300;
    s.tracks[0].total = 303;
    run_scenario(model, s);
    check_scenario(model, s, 2e-3);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(KvBlocks, AllocatesSharesAndFrees) {
    KvBlocks blocks(3);
    const auto a = blocks.allocate(), b = blocks.allocate(), c = blocks.allocate();
    ASSERT_TRUE(a && b && c);
    EXPECT_FALSE(blocks.allocate().has_value());
    blocks.retain(*a);
    EXPECT_EQ(blocks.references(*a), 2u);
    blocks.release(*a);
    EXPECT_EQ(blocks.free(), 0u);
    blocks.release(*a);
    EXPECT_EQ(blocks.free(), 1u);
    EXPECT_THROW(blocks.release(*a), Error);
    EXPECT_THROW(blocks.retain(*a), Error);
    EXPECT_THROW(blocks.release(7), Error);
    EXPECT_EQ(blocks.allocate(), a);
}

}  // namespace
}  // namespace vkf::test
