// A model split by layers (issue 31) against the same model on one device and against the
// double-precision CPU reference: several Contexts on the one test device stand in for
// several devices. Seeded random BLOOM, MPT (untied head, clip_qkv; learned positions with
// multi-query attention) and Baichuan (RMSNorm, SwiGLU) checkpoints of 4 layers, f16 and q4_0
// weights, 2 and 3 stages, even and uneven splits; two sequences of odd prompt lengths in
// 5-row chunks (ragged steps mixing prefill and decode), then greedy decoding, with the KV
// pools and logits poisoned (BatchOptions::poison). Every stage's Batch is given the same
// calls; the stages' hidden rows pass through host memory as they would between processes.

#include "host/model/batch.hpp"
#include "host/model/front_factory.hpp"
#include "host/model/generation.hpp"
#include "host/model/layer_split.hpp"
#include "host/model/session.hpp"
#include "host/model/split_batch.hpp"
#include "host/model/split_model.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/model/split_fixture.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>

namespace vkf::test {
namespace {

constexpr double kTolerance = 2e-5;  // against the reference: fp32 KV cache (test_model.cpp)
// Split against one device: the same kernels and plans on the same rows, the hidden rows
// copied exactly; measured bit-identical on lavapipe.
constexpr double kSplitTolerance = 1e-6;

ModelConfig untied_mpt() {
    ModelConfig c = four_layers(small_mpt(false, 0.3));
    c.tie_word_embeddings = false;
    return c;
}

ModelConfig mpt_positions() {
    ModelConfig c = four_layers(small_mpt(true, std::nullopt));
    c.n_kv_head = 1;
    c.alibi = false;
    c.learned_pos_emb = true;
    c.max_seq_len = 64;
    return c;
}

ModelConfig small_baichuan() {
    return ModelConfig{.family = ModelFamily::Baichuan,
                       .vocab_size = 523,
                       .hidden = 128,
                       .n_layer = 4,
                       .n_head = 4,
                       .n_kv_head = 4,
                       .head_dim = 32,
                       .ffn_hidden = 352,
                       .layer_norm_epsilon = 1e-6,
                       .no_bias = true,
                       .tie_word_embeddings = false};
}

// The suite's context and two more on the same device: three "devices", the second moving
// data through a staging buffer (ContextOptions::force_staging) as a discrete GPU does.
using ModelSplit = ThreeDevicesTest<true>;

struct Sequence {
    std::vector<std::uint32_t> tokens;  // prompt, then the greedy ones fed back
    std::vector<float> logits;          // [tokens, vocab]: every fed token's row
};

// One step over every stage: the first schedules, each later one runs the rows the one
// before ran from its hidden rows; the last's logits go to their sequences.
void step_stages(std::span<Batch* const> stages, std::map<SequenceId, Sequence>& sequences) {
    StepResult r = stages.front()->step();
    ASSERT_FALSE(r.ran.empty());
    for (std::size_t s = 1; s < stages.size(); ++s) {
        ASSERT_TRUE(r.ran.front().logits.empty()) << "a stage without the head returned logits";
        std::vector<StageRows> schedule;
        for (const SequenceOutput& out : r.ran) {
            schedule.push_back(StageRows{.id = out.id, .rows = out.tokens});
        }
        StepResult next = stages[s]->step(schedule, r.hidden);
        r = std::move(next);
    }
    EXPECT_TRUE(r.hidden.empty()) << "the last stage returned hidden rows";
    for (const SequenceOutput& out : r.ran) {
        Sequence& seq = sequences.at(out.id);
        seq.logits.insert(seq.logits.end(), out.logits.begin(), out.logits.end());
    }
}

// Two sequences (prompts of 13 and 7 tokens) through the stages' batches in 5-row steps, then
// 4 greedy tokens each; every stage's batch given the same calls.
std::map<SequenceId, Sequence> run_batches(std::span<Batch* const> stages, std::uint32_t vocab) {
    std::map<SequenceId, Sequence> sequences;
    for (const auto& [length, seed] : {std::pair{13u, 5u}, std::pair{7u, 6u}}) {
        const std::vector<std::uint32_t> prompt = random_token_ids(length, vocab, seed);
        SequenceId id = 0;
        for (Batch* batch : stages) {
            const SequenceId added = batch->add();
            EXPECT_TRUE(id == 0 || added == id);
            id = added;
            batch->feed(id, prompt, Logits::All);
        }
        sequences[id].tokens = prompt;
    }
    while (stages.front()->has_pending()) {
        step_stages(stages, sequences);
    }
    for (int step = 0; step < 4; ++step) {
        for (auto& [id, seq] : sequences) {
            const std::uint32_t next[] = {argmax(std::span(seq.logits).last(vocab))};
            seq.tokens.push_back(next[0]);
            for (Batch* batch : stages) {
                batch->feed(id, next);
            }
        }
        while (stages.front()->has_pending()) {
            step_stages(stages, sequences);
        }
    }
    return sequences;
}

BatchOptions batch_options(bool fused = true) {
    return BatchOptions{.max_tokens = 64,
                        .chunk = 5,
                        .fuse_qkv = fused,
                        .fuse_layernorm = fused,
                        .kv_dtype = DType::F32,
                        .poison = true};
}

struct Case {
    const char* name;
    ModelConfig config;
    WeightFormat format;
    std::vector<std::vector<std::uint32_t>> splits;  // layers per stage
    bool fused = true;  // false: the portable path, LayerNorms and the QKV repack and append separate
};

void check_case(const Case& c, std::span<Context* const> contexts) {
    SCOPED_TRACE(c.name);
    TempDir dir("vkf_test_split");
    write_random_checkpoint(dir.path(), c.config, 7, DType::F32, 1);
    const ModelOptions options{.weights = c.format};
    const Model whole(*contexts.front(), dir.path(), options);
    Batch one(whole, batch_options(c.fused));
    Batch* const one_stage[] = {&one};
    const std::map<SequenceId, Sequence> expected = run_batches(one_stage, c.config.vocab_size);

    const bool f16 = c.format.dense == DType::F16;
    const reference::Model reference(c.config, whole.checkpoint(),
                                     reference::ModelOptions{.round_weights_to_f16 = f16, .quantize = c.format.quant});
    for (const std::vector<std::uint32_t>& counts : c.splits) {
        const SplitModel split(contexts.first(counts.size()), dir.path(), counts, options);
        std::uint64_t stage_bytes = 0;
        for (const Model* stage : split.stages()) {
            EXPECT_EQ(stage->weights().bytes, weight_bytes(c.config, c.format, stage->layers()));
            stage_bytes += stage->weights().bytes;
        }
        const StageBatches batches = stage_batches(split, batch_options(c.fused));
        // Only the tied embedding is held twice (first stage: embedding; last: head).
        const std::uint64_t embedding = tensor_bytes(expected_tensors(c.config).front(), c.format);
        EXPECT_EQ(stage_bytes, whole.weights().bytes + (c.config.tie_word_embeddings ? embedding : 0));
        const std::map<SequenceId, Sequence> got = run_batches(batches.stages, c.config.vocab_size);
        ASSERT_EQ(got.size(), expected.size());
        double worst_split = 0.0, worst_ref = 0.0;
        for (const auto& [id, seq] : got) {
            const Sequence& want = expected.at(id);
            EXPECT_EQ(seq.tokens, want.tokens) << "greedy ids, sequence " << id;
            ASSERT_EQ(seq.logits.size(), want.logits.size());
            const std::vector<double> ref = reference.forward(seq.tokens);
            ASSERT_EQ(ref.size(), seq.logits.size());
            const std::vector<double> one_device(want.logits.begin(), want.logits.end());
            const std::string name = "sequence " + std::to_string(id);
            worst_split = std::max(worst_split, expect_rows_near(seq.logits, one_device, c.config.vocab_size,
                                                                 kSplitTolerance, name + " against one device"));
            worst_ref = std::max(worst_ref, expect_rows_near(seq.logits, ref, c.config.vocab_size, kTolerance,
                                                             name + " against the reference"));
        }
        std::printf("%s, split %s: largest relative logit error %.3g against one device, %.3g against the reference\n",
                    c.name, split_text(counts).c_str(), worst_split, worst_ref);
    }
}

constexpr WeightFormat kF16{.dense = DType::F16};
constexpr WeightFormat kQ4{.dense = DType::F16, .quant = QuantFormat::Q4_0};

TEST_F(ModelSplit, BloomStagesMatchOneDeviceAndTheReference) {
    check_case({"bloom f16", four_layers(small_bloom()), kF16, {{2, 2}, {1, 2, 1}}}, devices(3));
    check_case({"bloom q4_0", four_layers(small_bloom()), kQ4, {{3, 1}}}, devices(3));
}

TEST_F(ModelSplit, MptStagesMatchOneDeviceAndTheReference) {
    check_case({"mpt untied clip_qkv q4_0", untied_mpt(), kQ4, {{2, 2}, {1, 1, 2}}}, devices(3));
    check_case({"mpt learned positions mqa f16, unfused", mpt_positions(), kF16, {{1, 3}}, false}, devices(3));
}

TEST_F(ModelSplit, BaichuanStagesMatchOneDeviceAndTheReference) {
    check_case({"baichuan f16", small_baichuan(), kF16, {{3, 1}, {1, 2, 1}}}, devices(3));
}

// A split over this process's devices (make_front: a SplitBatch) under generate(), one
// sequence viewed by a BatchSession: the greedy ids, logits and chunks of a Session on one device.
TEST_F(ModelSplit, ASplitGeneratesWhatOneDeviceDoes) {
    const ModelConfig config = four_layers(small_bloom());
    TempDir dir("vkf_test_split_session");
    write_random_checkpoint(dir.path(), config, 9, DType::F16, 1);
    const Model whole(ctx(), dir.path());
    const std::uint32_t counts[] = {1, 2, 1};
    const SplitModel split(devices(3), dir.path(), counts);
    EXPECT_EQ(split.ranges(), (std::vector<LayerRange>{{0, 1}, {1, 3}, {3, 4}}));
    EXPECT_EQ(SplitModel(devices(2), dir.path(), {}).ranges(), (std::vector<LayerRange>{{0, 2}, {2, 4}})) << "auto";
    EXPECT_THROW(SplitModel(devices(2), dir.path(), counts), Error) << "3 counts for 2 devices";
    const SessionOptions options{.max_tokens = 24, .chunk = 4};
    Session session(whole, options);
    const std::unique_ptr<StageFront> front =
        make_front({.stages = {split.stages().begin(), split.stages().end()}}, session_batch_options(options));
    ASSERT_EQ(front->local_stages(), 3u);
    BatchSession stages(front->front(), config, options);
    const auto& pipeline = dynamic_cast<const SplitBatch&>(front->front());
    const std::vector<std::uint32_t> prompt = random_token_ids(11, config.vocab_size, 4);
    const GenerationOptions gen{.n_predict = 6, .keep_logits = true};
    // Prepared: every stage's steps are recorded before the prompt runs, none after.
    EXPECT_GT(front->prepare(11).pipelines, 0u);
    std::vector<std::uint64_t> recorded;
    for (std::size_t i = 0; i < front->local_stages(); ++i) {
        recorded.push_back(front->stage(i).stats().recordings);
        EXPECT_EQ(recorded.back(), 3u) << "stage " << i << ": chunks of 4 and 3 rows, decode steps of 1";
    }
    for (int round = 0; round < 2; ++round) {  // again after reset(): a fresh sequence on every stage
        const GenerationResult one = generate(session, prompt, gen);
        const GenerationResult three = generate(stages, prompt, gen);
        EXPECT_EQ(three.tokens, one.tokens);
        EXPECT_EQ(three.chunk_ends, one.chunk_ends);
        EXPECT_EQ(three.chunk_ends, (std::vector<std::uint32_t>{4, 8, 11, 12, 13, 14, 15, 16}));
        ASSERT_EQ(three.logits.size(), one.logits.size());
        const ErrorStats e =
            compare_to_reference(three.logits, std::vector<double>(one.logits.begin(), one.logits.end()));
        EXPECT_LE(e.max_rel, kSplitTolerance) << describe(e);
        EXPECT_EQ(stages.position(), session.position());
        EXPECT_EQ(stages.position(), 16u) << "the prompt and 5 of the 6 tokens: the last is not fed";
        session.reset();
        stages.reset();
        EXPECT_EQ(stages.position(), 0u);
    }
    for (std::size_t i = 0; i < front->local_stages(); ++i) {
        EXPECT_EQ(front->stage(i).stats().recordings, recorded[i]) << "stage " << i << " recorded a step anew";
    }
    // 3 stages: two hand-offs per step; 3 prompt chunks and 5 decode steps a round.
    EXPECT_EQ(pipeline.split_stats().hand_offs, 2u * 2 * 8);
    EXPECT_EQ(pipeline.split_stats().transfer_bytes, 2u * 2 * 16 * config.hidden * 4);
    EXPECT_GT(pipeline.split_stats().transfer_ms, 0.0);
    EXPECT_LT(pipeline.split_stats().transfer_ms, pipeline.split_stats().stage_ms);
}

TEST_F(ModelSplit, BadSplitsAndStageCallsAreRefused) {
    const ModelConfig config = four_layers(small_bloom());
    const auto split = [&](std::vector<std::uint32_t> counts) {
        return error_message([&] { split_layers(config, counts); });
    };
    EXPECT_NE(split({2, 1}).find("sum to 3, but the model has 4"), std::string::npos) << split({2, 1});
    EXPECT_NE(split({4, 0}).find("stage 1 has no layers"), std::string::npos) << split({4, 0});
    EXPECT_NE(split({1, 1, 1, 1, 1}).find("5 stages"), std::string::npos) << split({1, 1, 1, 1, 1});
    EXPECT_EQ(split_layers(config, std::vector<std::uint32_t>{1, 3}), (std::vector<LayerRange>{{0, 1}, {1, 4}}));
    EXPECT_EQ(parse_layer_counts("12,3"), (std::vector<std::uint32_t>{12, 3}));
    for (const char* bad : {"", "1,,2", "a", "1,-2", "2,"}) {
        EXPECT_THROW(parse_layer_counts(bad), Error) << bad;
    }
    const WeightFormat f16{.dense = DType::F16};
    EXPECT_THROW(Model(ctx(), config, f16, LayerRange{2, 2}), Error);
    EXPECT_THROW(Model(ctx(), config, f16, LayerRange{3, 5}), Error);

    const Model a(ctx(), config, f16, LayerRange{0, 2});
    const Model b(ctx(), config, f16, LayerRange{2, 4});
    const Model c(ctx(), config, f16, LayerRange{3, 4});
    EXPECT_TRUE(a.first_stage() && !a.last_stage() && !b.first_stage() && b.last_stage());
    const Model* const gap[] = {&a, &c};
    const Model* const reversed[] = {&b, &a};
    const Model* const no_head[] = {&a};
    for (const auto stages : {std::span<const Model* const>(gap), std::span<const Model* const>(reversed),
                              std::span<const Model* const>(no_head)}) {
        EXPECT_THROW(make_front({.stages = {stages.begin(), stages.end()}}, session_batch_options({.max_tokens = 8})),
                     Error);
    }

    Batch first(a, batch_options());
    Batch second(b, batch_options());
    const SequenceId id = first.add();
    ASSERT_EQ(second.add(), id);
    const std::vector<std::uint32_t> ids = random_token_ids(3, config.vocab_size, 1);
    first.feed(id, ids);
    second.feed(id, ids);
    const std::vector<float> hidden(3ull * config.hidden, 0.5f);
    const StageRows rows[] = {{id, 3}};
    EXPECT_NE(error_message([&] { second.step(); }).find("step(schedule, hidden)"), std::string::npos);
    EXPECT_THROW(first.step(rows, hidden), Error);
    EXPECT_NE(error_message([&] {
                  second.step(rows, std::span(hidden).first(hidden.size() - 1));
              }).find("767 hidden values for 3 rows"),
              std::string::npos);
    const StageRows too_many[] = {{id, 4}}, unknown[] = {{id + 1, 3}}, twice[] = {{id, 1}, {id, 2}};
    EXPECT_THROW(second.step(too_many, std::vector<float>(4ull * config.hidden)), Error);
    EXPECT_THROW(second.step(unknown, hidden), Error);
    EXPECT_THROW(second.step(twice, hidden), Error);
    EXPECT_EQ(second.position(id), 0u) << "a refused schedule ran or reserved something";
    const StepResult r = first.step();
    ASSERT_EQ(r.ran.size(), 1u);
    EXPECT_TRUE(r.ran.front().logits.empty());
    EXPECT_EQ(r.hidden.size(), 3ull * config.hidden);
    const StepResult last = second.step(rows, r.hidden);
    ASSERT_EQ(last.ran.size(), 1u);
    EXPECT_EQ(last.ran.front().logits.size(), config.vocab_size);
    EXPECT_TRUE(last.hidden.empty());
}

// auto divides the layers by the budgets left after each stage's fixed part, and refuses
// with both numbers when the model does not fit their sum.
TEST(ModelSplitAuto, LayersFollowTheBudgets) {
    const ModelConfig config = four_layers(small_bloom());
    const WeightFormat f32{.dense = DType::F32};
    const SessionSize session{.max_tokens = 64};
    const std::uint64_t need = estimate_model_memory(config, f32, session).total();
    const std::uint64_t even[] = {need, need};
    EXPECT_EQ(auto_split(config, f32, session, even), (std::vector<LayerRange>{{0, 2}, {2, 4}}));
    // A budget that holds the first stage's fixed part and one layer gets one layer.
    const ModelMemoryEstimate one = estimate_stage_memory(config, f32, session, LayerRange{0, 1});
    const std::uint64_t uneven[] = {one.total() + 1000, 2 * need};
    EXPECT_EQ(auto_split(config, f32, session, uneven), (std::vector<LayerRange>{{0, 1}, {1, 4}}));
    const std::uint64_t three[] = {need, need, need};
    const std::vector<LayerRange> ranges = auto_split(config, f32, session, three);
    ASSERT_EQ(ranges.size(), 3u);
    EXPECT_EQ(ranges.front().begin, 0u);
    EXPECT_EQ(ranges.back().end, 4u);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        EXPECT_GE(ranges[i].size(), 1u);
        EXPECT_LE(estimate_stage_memory(config, f32, session, ranges[i]).total(), three[i]);
    }
    // Too little in all: the message names what the model needs over these devices and
    // what they have.
    const std::uint64_t small[] = {need / 3, need / 3};
    const std::string message = error_message([&] { auto_split(config, f32, session, small); });
    EXPECT_NE(message.find(std::to_string(2 * (need / 3))), std::string::npos) << message;
    const std::uint64_t split_need = estimate_stage_memory(config, f32, session, LayerRange{0, 2}).total() +
                                     estimate_stage_memory(config, f32, session, LayerRange{2, 4}).total();
    EXPECT_NE(message.find(std::to_string(split_need)), std::string::npos) << message;
    // Enough in all, but one device cannot hold its fixed part and a layer.
    const std::uint64_t lopsided[] = {4 * need, one.total() / 2};
    EXPECT_NE(error_message([&] { auto_split(config, f32, session, lopsided); }).find("device 1"), std::string::npos);
    const std::uint64_t five[] = {need, need, need, need, need};
    EXPECT_THROW(auto_split(config, f32, session, five), Error);
}

// A stage reads, uploads and counts only its own tensors: under a budget the whole model does
// not fit, each half loads.
TEST(ModelSplitMemory, StagesFitWhereTheWholeModelDoesNot) {
    const ModelConfig config = four_layers(small_bloom());
    TempDir dir("vkf_test_split_memory");
    write_random_checkpoint(dir.path(), config, 3, DType::F32, 1);
    MessageSink sink;
    const auto limited = [&] {
        return std::make_unique<Context>(test_options(sink, LimitOverrides::parse("device_heap=8M,host_heap=2M")));
    };
    std::unique_ptr<Context> ctx = limited();
    const WeightFormat f32{.dense = DType::F32};
    const std::uint64_t budget = ctx->memory_budget().available();
    ASSERT_GT(estimate_model_memory(config, f32).total(), budget);
    ASSERT_LT(estimate_model_memory(config, f32, {}, LayerRange{2, 4}).total(), budget);
    EXPECT_THROW(Model(*ctx, dir.path()), Error);
    for (const LayerRange range : {LayerRange{0, 2}, LayerRange{2, 4}}) {
        const Model stage(*ctx, dir.path(), ModelOptions{.layers = range});
        EXPECT_EQ(stage.weights().bytes, weight_bytes(config, f32, range));
        EXPECT_EQ(stage.weights().layers.at(range.begin == 0 ? 3 : 0).qkv.weight.valid(), false);
    }
    // Two Contexts on one device share its memory: auto gives each half the budget, which
    // does not hold half the model.
    std::unique_ptr<Context> other = limited();
    Context* const both[] = {ctx.get(), other.get()};
    const std::string message = error_message([&] { SplitModel(both, dir.path(), {}); });
    EXPECT_NE(message.find("split auto: the model needs"), std::string::npos) << message;
    EXPECT_EQ(ctx->memory_stats().buffer_count + other->memory_stats().buffer_count, 0u);
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
