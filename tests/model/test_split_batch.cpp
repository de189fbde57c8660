// SplitBatch (issue 31): many sequences over a model split by layers on several Contexts of
// this process, pipelined, against one Batch on one device. Several Contexts on the one test
// device stand in for several devices. Seeded random BLOOM and MPT checkpoints of 4 layers,
// f16 and q4_0, 2 and 3 stages, even and uneven; ragged sequences (prompts of 13, 7 and 11
// tokens in 5-row steps with every prompt row's logits, one added mid-run, one removed while
// its step is in flight), then greedy decoding, the KV pools and logits poisoned. The
// pipeline runs other chunks than one device (a sequence whose step is in flight waits), so
// the logits agree within 1e-5 rather than exactly; the greedy ids are the same. A stage's
// error on its worker thread reaches step(), and a SplitBatch dies cleanly with steps out.

#include "host/model/batch.hpp"
#include "host/model/split_batch.hpp"
#include "host/model/split_model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/model/split_fixture.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>

namespace vkf::test {
namespace {

constexpr double kTolerance = 1e-5;

// The suite's context and two more on the same device: three "devices".
using SplitBatchTest = ThreeDevicesTest<false>;

BatchOptions batch_options(std::uint32_t chunk = 5) {
    return BatchOptions{.max_tokens = 128, .chunk = chunk, .kv_dtype = DType::F32, .poison = true};
}

struct Sequence {
    std::vector<std::uint32_t> tokens;  // prompt, then the greedy ones fed back
    std::vector<float> logits;          // [rows, vocab]: every prompt row's, then each greedy token's
    std::uint32_t generated = 0;
    bool removed = false;
};

constexpr std::uint32_t kGreedy = 4;

// Prompts D (11 tokens), A (13) and B (7) from the start, D removed after the second step()
// (its second prompt chunk then in flight through a split), C (5) added after the third;
// each live one decodes kGreedy greedy tokens. The same calls whatever the front's timing.
std::map<char, Sequence> drive(BatchFront& front, std::uint32_t vocab) {
    std::map<char, Sequence> seqs;
    std::map<SequenceId, char> names;
    const auto start = [&](char name, std::uint32_t length) {
        const SequenceId id = front.add();
        seqs[name].tokens = random_token_ids(length, vocab, 10 + name);
        front.feed(id, seqs[name].tokens, Logits::All);
        names[id] = name;
    };
    start('D', 11);  // first: stage 0's first steps run its prompt
    start('A', 13);
    start('B', 7);
    const auto finished = [&] {
        return std::all_of(seqs.begin(), seqs.end(),
                           [](const auto& s) { return s.second.removed || s.second.generated == kGreedy; });
    };
    for (int calls = 1; !finished(); ++calls) {
        if (calls > 500) {
            ADD_FAILURE() << "the run does not end";
            break;
        }
        if (calls == 4) {
            start('C', 5);
        }
        const StepResult r = front.step();
        for (const SequenceOutput& out : r.ran) {
            Sequence& seq = seqs.at(names.at(out.id));
            EXPECT_FALSE(seq.removed) << "a removed sequence's logits came back";
            EXPECT_EQ(out.logits.size() % vocab, 0u);
            seq.logits.insert(seq.logits.end(), out.logits.begin(), out.logits.end());
            if (out.done && seq.generated < kGreedy) {
                const std::uint32_t next[] = {argmax(std::span(seq.logits).last(vocab))};
                seq.tokens.push_back(next[0]);
                ++seq.generated;
                if (seq.generated < kGreedy) {
                    front.feed(out.id, next);
                }
            }
        }
        if (calls == 2) {
            // Its second prompt chunk is in flight through a split now.
            const SequenceId d =
                std::find_if(names.begin(), names.end(), [](auto& n) { return n.second == 'D'; })->first;
            front.remove(d);
            seqs['D'].removed = true;
        }
    }
    return seqs;
}

void check_case(const char* name, const ModelConfig& config, WeightFormat format,
                std::vector<std::vector<std::uint32_t>> splits, std::span<Context* const> contexts) {
    SCOPED_TRACE(name);
    TempDir dir("vkf_test_split_batch");
    write_random_checkpoint(dir.path(), config, 7, DType::F32, 1);
    const ModelOptions options{.weights = format};
    const Model whole(*contexts.front(), dir.path(), options);
    Batch one(whole, batch_options());
    const std::map<char, Sequence> expected = drive(one, config.vocab_size);
    for (const std::vector<std::uint32_t>& counts : splits) {
        const SplitModel split(contexts.first(counts.size()), dir.path(), counts, options);
        const StageBatches batches = stage_batches(split, batch_options());
        SplitBatch front(batches.stages);
        const std::map<char, Sequence> got = drive(front, config.vocab_size);
        double worst = 0.0;
        for (const char label : {'A', 'B', 'C'}) {
            const Sequence& seq = got.at(label);
            const Sequence& want = expected.at(label);
            EXPECT_EQ(seq.tokens, want.tokens) << "greedy ids of " << label;
            ASSERT_EQ(seq.logits.size(), want.logits.size()) << label;
            const std::size_t rows = seq.logits.size() / config.vocab_size;
            EXPECT_EQ(rows, want.tokens.size() - 1) << label << ": every prompt row, then each fed greedy token";
            const std::vector<double> one_device(want.logits.begin(), want.logits.end());
            worst = std::max(
                worst, expect_rows_near(seq.logits, one_device, config.vocab_size, kTolerance, std::string(1, label)));
        }
        const PipelineStats p = front.pipeline();
        EXPECT_GT(p.overlapped, 0u) << "no step started while another was in flight";
        EXPECT_GE(p.max_in_flight, 2u);
        EXPECT_LE(p.max_in_flight, counts.size());
        EXPECT_EQ(front.in_flight(), 0u);
        EXPECT_EQ(front.split_stats().hand_offs, p.steps * (counts.size() - 1));
        std::printf(
            "%s, split %s: %llu steps, %llu overlapped, at most %u in flight; largest relative logit "
            "difference to one device %.3g\n",
            name, split_text(counts).c_str(), static_cast<unsigned long long>(p.steps),
            static_cast<unsigned long long>(p.overlapped), p.max_in_flight, worst);
    }
}

constexpr WeightFormat kF16{.dense = DType::F16};
constexpr WeightFormat kQ4{.dense = DType::F16, .quant = QuantFormat::Q4_0};

TEST_F(SplitBatchTest, BloomPipelineMatchesOneDevice) {
    check_case("bloom f16", four_layers(small_bloom()), kF16, {{2, 2}, {1, 2, 1}}, devices(3));
}

TEST_F(SplitBatchTest, MptPipelineMatchesOneDevice) {
    check_case("mpt q4_0", four_layers(small_mpt(false, 0.3)), kQ4, {{3, 1}, {1, 1, 2}}, devices(3));
}

// A later stage's error, thrown on its worker thread, reaches step() as the same vkf::Error;
// afterwards remove() still works and the SplitBatch is destroyed without a hang.
TEST_F(SplitBatchTest, AWorkersErrorReachesStep) {
    const ModelConfig config = four_layers(small_bloom());
    const WeightFormat f16{.dense = DType::F16};
    std::vector<std::unique_ptr<Model>> models;
    for (const LayerRange range : {LayerRange{0, 1}, LayerRange{1, 3}, LayerRange{3, 4}}) {
        models.push_back(std::make_unique<Model>(*devices(3).at(models.size()), config, f16, range));
    }
    // The last stage's steps hold 3 rows, the first's 5: its step of 5 rows throws.
    Batch a(*models[0], batch_options()), b(*models[1], batch_options()), c(*models[2], batch_options(3));
    Batch* const stages[] = {&a, &b, &c};
    SplitBatch front(stages);
    const SequenceId id = front.add();
    front.feed(id, random_token_ids(9, config.vocab_size, 3));
    const std::string message = error_message([&] {
        for (int i = 0; i < 10; ++i) {
            front.step();
        }
    });
    EXPECT_NE(message.find("a step of 5 rows of 1 sequences, over the batch's 3 rows"), std::string::npos) << message;
    EXPECT_THROW(front.step(), Error) << "the pipeline stays failed";
    EXPECT_THROW(front.add(), Error);
    front.remove(id);

    Batch* const one[] = {&a};
    EXPECT_THROW(SplitBatch{one}, Error) << "one stage";
    Batch* const reversed[] = {&b, &a};
    EXPECT_THROW(SplitBatch{reversed}, Error);
}

// Destroyed with steps out on every stage: the workers stop after the step each runs.
TEST_F(SplitBatchTest, DestroyedWithStepsInFlight) {
    const ModelConfig config = four_layers(small_bloom());
    const WeightFormat f16{.dense = DType::F16};
    std::vector<std::unique_ptr<Model>> models;
    std::vector<std::unique_ptr<Batch>> batches;
    std::vector<Batch*> stages;
    for (const LayerRange range : {LayerRange{0, 2}, LayerRange{2, 3}, LayerRange{3, 4}}) {
        models.push_back(std::make_unique<Model>(*devices(3).at(models.size()), config, f16, range));
        batches.push_back(std::make_unique<Batch>(*models.back(), batch_options(4)));
        stages.push_back(batches.back().get());
    }
    auto front = std::make_unique<SplitBatch>(stages);
    for (std::uint32_t s = 0; s < 3; ++s) {
        front->feed(front->add(), random_token_ids(4, config.vocab_size, s));
    }
    EXPECT_TRUE(front->step().ran.empty());
    EXPECT_TRUE(front->step().ran.empty());
    EXPECT_EQ(front->in_flight(), 2u);
    front.reset();
}

}  // namespace
}  // namespace vkf::test
