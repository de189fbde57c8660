// Whole BLOOM and MPT models on the device against the double-precision CPU reference model
// (host/reference/model.hpp): seeded random checkpoints in the Hugging Face format (small
// BLOOM: 2 layers, hidden 256, 8 heads; small MPT: 2 layers, 12 heads, with and without
// biases and clip_qkv), fp32 and fp16 weights, single-file and sharded, fp32 and fp16 KV
// caches. Logits of the prefill (every position) and of 8 decode steps through the KV cache
// are compared; the decode inputs are the greedy tokens, as generation would feed them.

#include "host/model/generation.hpp"
#include "host/model/session.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace vkf::test {
namespace {

namespace fs = std::filesystem;

// A random checkpoint in a fresh temp directory, removed afterwards.
class TempModel {
public:
    TempModel(const ModelConfig& config, DType dtype, int shards, std::uint64_t seed) {
        write_random_checkpoint(dir_.path(), config, seed, dtype, shards);
    }
    const fs::path& dir() const { return dir_.path(); }

private:
    TempDir dir_{"vkf_test_model"};
};

std::uint32_t argmax(std::span<const float> row) {
    return static_cast<std::uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// fp32 activations and KV cache against double: measured 4e-7 .. 2e-6 on lavapipe.
constexpr double kTolerance = 2e-5;

struct Case {
    const char* name;
    ModelConfig config;
    DType dtype;
    int shards = 1;
    // fp32 by default here: the reference model keeps K and V in double, so only an fp32
    // cache meets kTolerance; fp16 caches are checked against tolerance(DType::F16).
    DType kv_dtype = DType::F32;
    bool fuse_qkv = true;  // SessionOptions::fuse_qkv and fuse_layernorm
};

class Model_ : public VulkanTest {};

// Whether a Session on `ctx` fuses the QKV projection where asked: the SCATTER kernels bind 7
// storage buffers per stage (dense weights); devices that allow fewer (Vulkan's minimum of 4,
// VKF_LIMITS=spec_minimum) take the separate passes.
bool can_fuse_qkv(const Context& ctx) {
    // The matmul op answers (MatmulPlan::scatter); the shape does not change the answer.
    return plan_matmul(matmul_device(ctx), 1, 96, 32, DType::F32, MatmulOptions{.scatter = true}).scatter;
}

// Prefill of a 13-token prompt, then 8 greedy decode steps; every logit row against the
// reference's forward over the same sequence. Returns the largest relative error of a row.
double check_against_reference(Context& ctx, const Case& c, double tolerance) {
    SCOPED_TRACE(c.name);
    const TempModel files(c.config, c.dtype, c.shards, 7);
    const Model model(ctx, files.dir());
    const bool f16 = model.weight_format() == WeightFormat{.dense = DType::F16};
    EXPECT_EQ(f16, c.dtype == DType::F16) << "fp16 checkpoints load as fp16, others as fp32";

    constexpr std::uint32_t kPrompt = 13, kSteps = 8;
    const std::uint32_t vocab = c.config.vocab_size;
    std::vector<std::uint32_t> ids = random_token_ids(kPrompt, vocab, 11);
    Session session(model, SessionOptions{.max_tokens = kPrompt + kSteps,
                                          .fuse_qkv = c.fuse_qkv,
                                          .fuse_layernorm = c.fuse_qkv,
                                          .kv_dtype = c.kv_dtype});
    EXPECT_EQ(session.fused_qkv(), c.fuse_qkv && can_fuse_qkv(ctx));
    EXPECT_EQ(session.kv_dtype(), c.kv_dtype);
    std::vector<float> gpu = session.forward(ids, Session::Logits::All);
    EXPECT_EQ(gpu.size(), std::size_t{kPrompt} * vocab);
    if (gpu.size() != std::size_t{kPrompt} * vocab) {
        return INFINITY;
    }
    for (std::uint32_t s = 0; s < kSteps; ++s) {
        const std::uint32_t next = argmax(std::span(gpu).last(vocab));
        ids.push_back(next);
        const std::uint32_t one[] = {next};
        const std::vector<float> row = session.forward(one);
        EXPECT_EQ(row.size(), vocab);
        if (row.size() != vocab) {
            return INFINITY;
        }
        gpu.insert(gpu.end(), row.begin(), row.end());
    }
    EXPECT_EQ(session.position(), kPrompt + kSteps);

    const reference::Model reference(model.config(), model.checkpoint(),
                                     reference::ModelOptions{.round_weights_to_f16 = f16});
    const std::vector<double> ref = reference.forward(ids);
    EXPECT_EQ(ref.size(), gpu.size());
    if (ref.size() != gpu.size()) {
        return INFINITY;
    }
    double worst = 0.0;
    for (std::uint32_t t = 0; t < kPrompt + kSteps; ++t) {
        const ErrorStats e = compare_to_reference(std::span(gpu).subspan(std::size_t{t} * vocab, vocab),
                                                  std::span(ref).subspan(std::size_t{t} * vocab, vocab));
        EXPECT_LT(e.max_rel, tolerance) << (t < kPrompt ? "prefill position " : "decode step ")
                                        << (t < kPrompt ? t : t - kPrompt) << ": " << describe(e);
        worst = std::max(worst, e.max_rel);
    }
    std::printf("%s: largest relative logit error %.3g over %u prefill rows and %u decode steps\n", c.name, worst,
                kPrompt, kSteps);
    if (c.config.clip_qkv) {
        // The clamp must matter for this test to check it: without it the logits differ.
        ModelConfig unclipped = c.config;
        unclipped.clip_qkv = std::nullopt;
        const reference::Model no_clip(unclipped, model.checkpoint(),
                                       reference::ModelOptions{.round_weights_to_f16 = f16});
        const ErrorStats e = compare_to_reference(gpu, no_clip.forward(ids));
        EXPECT_GT(e.max_rel, 100 * tolerance) << "clip_qkv changes nothing for this model: " << describe(e);
    }
    return worst;
}

TEST_F(Model_, SmallBloomMatchesTheReference) {
    check_against_reference(ctx(), {"bloom f32", small_bloom(), DType::F32}, kTolerance);
    check_against_reference(ctx(), {"bloom f16", small_bloom(), DType::F16}, kTolerance);
}

TEST_F(Model_, SmallMptMatchesTheReference) {
    check_against_reference(ctx(), {"mpt no_bias f32", small_mpt(true, std::nullopt), DType::F32}, kTolerance);
    check_against_reference(ctx(), {"mpt bias clip_qkv f16", small_mpt(false, 0.3), DType::F16}, kTolerance);
    // The portable path: separate repack and append passes, each chunk recorded anew.
    check_against_reference(
        ctx(), {"mpt bias clip_qkv f16, unfused", small_mpt(false, 0.3), DType::F16, 1, DType::F32, false}, kTolerance);
    check_against_reference(ctx(), {"bloom f32, unfused", small_bloom(), DType::F32, 1, DType::F32, false}, kTolerance);
}

// The default cache: K and V stored as fp16, Q, the attention output and the arithmetic fp32.
// The reference keeps K and V in double, so the logits differ by what rounding K and V to
// fp16 changes, within the fp16 storage bound; and by more than an fp32 cache's error, which
// shows the cache really holds halves.
TEST_F(Model_, Fp16KvCacheMatchesTheReference) {
    const double f16_tolerance = tolerance(DType::F16);
    const double bloom16 =
        check_against_reference(ctx(), {"bloom f32, kv f16", small_bloom(), DType::F32, 1, DType::F16}, f16_tolerance);
    const double bloom32 = check_against_reference(ctx(), {"bloom f32, kv f32", small_bloom(), DType::F32}, kTolerance);
    EXPECT_GT(bloom16, 2 * bloom32);
    check_against_reference(ctx(), {"mpt bias clip_qkv f16, kv f16", small_mpt(false, 0.3), DType::F16, 1, DType::F16},
                            f16_tolerance);
    EXPECT_EQ(SessionOptions{}.kv_dtype, DType::F16);
}

TEST_F(Model_, Fp16KvCacheTakesHalfTheBytes) {
    const ModelConfig config = small_mpt(true, std::nullopt);
    const Model model(ctx(), config, WeightFormat{.dense = DType::F16});
    constexpr std::uint32_t kTokens = 40;
    const Session f32(model, SessionOptions{.max_tokens = kTokens, .kv_dtype = DType::F32});
    const Session f16(model, SessionOptions{.max_tokens = kTokens, .kv_dtype = DType::F16});
    // K and V of every layer: max_tokens (in whole 16-token blocks: 48) x hidden values each,
    // 4 or 2 bytes.
    const std::uint64_t rows = (kTokens + 15) / 16 * 16;
    const std::uint64_t f32_cache = 2ull * config.n_layer * rows * config.hidden * 4;
    EXPECT_EQ(f32.device_bytes() - f16.device_bytes(), f32_cache / 2);
    EXPECT_THROW(Session(model, SessionOptions{.max_tokens = kTokens, .kv_dtype = DType::BF16}), Error);
    // The max_tokens bound follows the element size: 384 x 2 bytes x 200 tokens fits 160 KiB
    // in fp16 but not in fp32.
    MessageSink sink;
    Context small(test_options(sink, LimitOverrides::parse("storage_buffer_range=160K")));
    const Model small_model(small, config, WeightFormat{.dense = DType::F16});
    EXPECT_NO_THROW(Session(small_model, SessionOptions{.max_tokens = 200, .kv_dtype = DType::F16}));
    EXPECT_THROW(Session(small_model, SessionOptions{.max_tokens = 200, .kv_dtype = DType::F32}), Error);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST_F(Model_, ShardedAndBf16CheckpointsLoad) {
    // BF16 weights are widened to fp32 exactly; three shards hold the same tensors.
    check_against_reference(ctx(), {"bloom bf16 sharded", small_bloom(), DType::BF16, 3}, kTolerance);
}

TEST(ModelForcedLimits, PhoneLimitsAndASmallStorageRangeBindWeightsInPieces) {
    // With a 256 KiB maxStorageBufferRange the embedding table and the MLP weights
    // (1 MiB each in fp32) are bound in row ranges, as BLOOM-560m's 490 MiB table is on a
    // phone; phone limits shrink the tiles.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("phone,storage_buffer_range=256K")));
    check_against_reference(ctx, {"bloom f32, phone limits", small_bloom(), DType::F32}, kTolerance);
    check_against_reference(ctx, {"mpt f16, phone limits", small_mpt(true, 0.3), DType::F16}, kTolerance);
    check_against_reference(ctx, {"bloom f16, kv f16, phone limits", small_bloom(), DType::F16, 1, DType::F16},
                            tolerance(DType::F16));
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST_F(Model_, ChunkedPrefillEqualsOneSubmission) {
    const TempModel files(small_mpt(true, 0.3), DType::F32, 1, 3);
    const Model model(ctx(), files.dir());
    const auto ids = random_token_ids(23, model.config().vocab_size, 5);
    Session whole_prompt(model, SessionOptions{.max_tokens = 23});
    Session chunked(model, SessionOptions{.max_tokens = 23, .chunk = 5});
    const auto a = whole_prompt.forward(ids, Session::Logits::All);
    const auto b = chunked.forward(ids, Session::Logits::All);
    std::vector<double> ref(a.begin(), a.end());
    const ErrorStats e = compare_to_reference(b, ref);
    EXPECT_LT(e.max_rel, 1e-5) << describe(e);
    EXPECT_EQ(chunked.submissions(), 5u);
    EXPECT_EQ(whole_prompt.submissions(), 1u);
}

// One recorded decoding step, re-submitted for every token with the key count in a buffer,
// gives exactly the logits of steps recorded afresh each time (the same kernels), and the
// fused path (QKV scatter, LayerNorms inside the matmuls) those of the separate passes
// within the fp16 cache's rounding. Both paths meet the reference (SmallMptMatchesTheReference).
TEST_F(Model_, ResubmittedDecodeStepEqualsFreshlyRecordedSteps) {
    for (const bool bloom : {true, false}) {
        SCOPED_TRACE(bloom ? "bloom" : "mpt with clip_qkv");
        const TempModel files(bloom ? small_bloom() : small_mpt(true, 0.5), DType::F16, 1, 5);
        const Model model(ctx(), files.dir());
        const std::uint32_t vocab = model.config().vocab_size;
        constexpr std::uint32_t kPrompt = 7, kSteps = 64;
        const SessionOptions base{.max_tokens = kPrompt + kSteps, .chunk = 4};
        SessionOptions fresh_options = base;
        fresh_options.reuse_steps = false;
        SessionOptions unfused_options = base;
        unfused_options.fuse_qkv = false;
        unfused_options.fuse_layernorm = false;
        Session reused(model, base), fresh(model, fresh_options), unfused(model, unfused_options);
        ASSERT_EQ(reused.fused_qkv(), can_fuse_qkv(ctx()));
        std::vector<std::uint32_t> ids = random_token_ids(kPrompt, vocab, 3);
        std::vector<float> a = reused.forward(ids), b = fresh.forward(ids), u = unfused.forward(ids);
        for (std::uint32_t step = 0; step < kSteps; ++step) {
            ASSERT_EQ(a, b) << "step " << step;
            const std::vector<double> fused(a.begin(), a.end());
            const ErrorStats e = compare_to_reference(u, fused);
            // Values equal within fp32 rounding may round to different halves in the cache.
            ASSERT_LT(e.max_rel, tolerance(DType::F16)) << "step " << step << ": " << describe(e);
            const std::uint32_t next[] = {argmax(a)};
            a = reused.forward(next);
            b = fresh.forward(next);
            u = unfused.forward(next);
        }
        // Prefill chunks of 4 and 3 tokens, then one decoding list for all 64 steps (the
        // separate passes too: their K/V appends read the slots from a buffer).
        EXPECT_EQ(reused.stats().recordings, 3u);
        EXPECT_EQ(fresh.stats().recordings, 2u + kSteps);
        EXPECT_EQ(reused.stats().submissions, 2u + kSteps);
    }
}

TEST(PromptChunks, StayUnderTheSubmissionTarget) {
    EXPECT_EQ(prompt_chunk_after(100.0, 16, 500, 128), 64u);  // 6.25 ms a token: 80 fit, 64
    EXPECT_EQ(prompt_chunk_after(10.0, 16, 500, 128), 128u);  // 800 fit: the maximum
    EXPECT_EQ(prompt_chunk_after(4000.0, 16, 500, 128), 2u);  // 250 ms a token
    EXPECT_EQ(prompt_chunk_after(9000.0, 8, 500, 128), 1u);   // over the target alone: 1
    EXPECT_EQ(prompt_chunk_after(0.0, 16, 500, 100), 100u);   // nothing measured
    EXPECT_EQ(prompt_chunk_after(1.0, 16, 500, 100), 100u);   // not a power of two: the maximum
}

TEST_F(Model_, BadInputsAreRefused) {
    const TempModel files(small_bloom(), DType::F16, 1, 3);
    const Model model(ctx(), files.dir());
    Session session(model, SessionOptions{.max_tokens = 4});
    const std::uint32_t too_big[] = {1, model.config().vocab_size};
    EXPECT_THROW(session.forward(too_big), Error);
    EXPECT_THROW(session.forward({}), Error);
    const std::uint32_t five[] = {1, 2, 3, 4, 5};
    EXPECT_THROW(session.forward(five), Error);
    EXPECT_EQ(session.position(), 0u);
    EXPECT_THROW(Session(model, SessionOptions{.max_tokens = 0}), Error);
}

TEST_F(Model_, ProfilingCountsEveryOpKind) {
    const TempModel files(small_bloom(), DType::F16, 1, 3);
    const Model model(ctx(), files.dir());
    const std::uint32_t ids[] = {1, 2, 3};
    // Fused QKV: no separate append passes; unfused: Q and K/V repacked by kv append.
    for (const bool fused : {true, false}) {
        Session session(model, SessionOptions{.max_tokens = 8, .profiling = true, .fuse_qkv = fused});
        session.forward(ids);
        for (const char* kind : {"embedding", "layernorm", "matmul", "attention"}) {
            ASSERT_TRUE(session.profile().contains(kind)) << kind;
            EXPECT_GT(session.profile().at(kind).dispatches, 0u) << kind;
        }
        EXPECT_EQ(session.profile().contains("kv append"), !(fused && can_fuse_qkv(ctx())));
        EXPECT_EQ(session.fused_qkv(), fused && can_fuse_qkv(ctx()));
    }
}

TEST_F(Model_, GreedyGenerationFollowsTheArgmaxOfEachStep) {
    const TempModel files(small_mpt(true, std::nullopt), DType::F16, 1, 9);
    const Model model(ctx(), files.dir());
    const std::uint32_t vocab = model.config().vocab_size;
    const auto prompt = random_token_ids(6, vocab, 21);
    constexpr std::uint32_t kPredict = 5;
    Session session(model, SessionOptions{.max_tokens = 6 + kPredict - 1});
    std::vector<std::uint32_t> streamed;
    const GenerationResult result =
        generate(session, prompt,
                 GenerationOptions{
                     .n_predict = kPredict, .keep_logits = true, .on_token = [&](std::uint32_t i, std::uint32_t id) {
                         EXPECT_EQ(i, streamed.size());
                         streamed.push_back(id);
                         return true;
                     }});
    ASSERT_EQ(result.tokens.size(), kPredict);
    EXPECT_EQ(result.stop, StopReason::Length);
    EXPECT_EQ(streamed, result.tokens);
    ASSERT_EQ(result.logits.size(), std::size_t{kPredict} * vocab);
    EXPECT_EQ(session.position(), 6 + kPredict - 1) << "the last token is sampled, not fed back";
    EXPECT_GT(result.prefill_tokens_per_second(), 0.0);
    EXPECT_GT(result.decode_tokens_per_second(), 0.0);

    // The same steps by hand: each logits row comes from the sequence so far.
    Session manual(model, SessionOptions{.max_tokens = 6 + kPredict});
    std::vector<float> logits = manual.forward(prompt);
    for (std::uint32_t i = 0; i < kPredict; ++i) {
        const auto row = std::span(result.logits).subspan(std::size_t{i} * vocab, vocab);
        EXPECT_EQ(result.tokens[i], argmax(row)) << "step " << i;
        std::vector<double> expected(logits.begin(), logits.end());
        const ErrorStats e = compare_to_reference(row, expected);
        EXPECT_LT(e.max_rel, 1e-6) << "step " << i << ": " << describe(e);
        const std::uint32_t next[] = {result.tokens[i]};
        logits = manual.forward(next);
    }

    // Seeded sampling is reproducible.
    const auto sample = [&](std::uint64_t seed) {
        Session s(model, SessionOptions{.max_tokens = 6 + 7});
        return generate(s, prompt,
                        GenerationOptions{.n_predict = 8,
                                          .sampling = {.temperature = 1.3f, .top_k = 40, .top_p = 0.9f, .seed = seed}})
            .tokens;
    };
    EXPECT_EQ(sample(3), sample(3));

    // Stopping: at a stop id (kept in the tokens), or when the caller says so.
    const auto stopped = [&](GenerationOptions options) {
        Session s(model, SessionOptions{.max_tokens = 6 + kPredict - 1});
        options.n_predict = kPredict;
        return generate(s, prompt, options);
    };
    const GenerationResult at_eos = stopped({.stop_ids = {result.tokens[2], 9999}});
    const auto first_of_third = std::find(result.tokens.begin(), result.tokens.end(), result.tokens[2]);
    EXPECT_EQ(at_eos.tokens, std::vector(result.tokens.begin(), first_of_third + 1));
    EXPECT_EQ(at_eos.stop, StopReason::StopToken);
    const GenerationResult by_caller = stopped({.on_token = [](std::uint32_t i, std::uint32_t) { return i < 1; }});
    EXPECT_EQ(by_caller.tokens, std::vector(result.tokens.begin(), result.tokens.begin() + 2));
    EXPECT_EQ(by_caller.stop, StopReason::Caller);

    // A second turn continues the cached sequence: the same tokens as one run over
    // prompt + first turn + the second prompt.
    {
        const auto turn2 = random_token_ids(3, vocab, 22);
        Session chat(model, SessionOptions{.max_tokens = 32});
        const GenerationResult first = generate(chat, prompt, GenerationOptions{.n_predict = 3});
        std::vector<std::uint32_t> next_prompt{first.tokens.back()};
        next_prompt.insert(next_prompt.end(), turn2.begin(), turn2.end());
        const GenerationResult second = generate(chat, next_prompt, GenerationOptions{.n_predict = 3});
        std::vector<std::uint32_t> whole(prompt.begin(), prompt.end());
        whole.insert(whole.end(), first.tokens.begin(), first.tokens.end());
        whole.insert(whole.end(), turn2.begin(), turn2.end());
        Session once(model, SessionOptions{.max_tokens = 32});
        EXPECT_EQ(generate(once, whole, GenerationOptions{.n_predict = 3}).tokens, second.tokens);
        EXPECT_EQ(chat.position(), whole.size() + 2);
    }

    // Misuse.
    EXPECT_THROW(generate(session, prompt, GenerationOptions{}), Error) << "no room left after the first run";
    Session small(model, SessionOptions{.max_tokens = 8});
    // A full cache (no window) ends generation: 6 prompt tokens and 2 fed back fill the 8 rows.
    const GenerationResult cut = generate(small, prompt, GenerationOptions{.n_predict = 4});
    EXPECT_EQ(cut.stop, StopReason::CacheFull);
    EXPECT_EQ(cut.tokens.size(), 3u);
    EXPECT_THROW(generate(small, prompt, GenerationOptions{.n_predict = 1}), Error) << "the prompt has no room left";
    EXPECT_THROW(generate(small, std::span<const std::uint32_t>{}, GenerationOptions{}), Error);
}

TEST_F(Model_, SyntheticWeightsRunWithoutACheckpoint) {
    // What vkf-bench's block and model suites run: the shapes without a file.
    for (const DType dtype : {DType::F32, DType::F16}) {
        const Model model(ctx(), small_mpt(false, 0.3), WeightFormat{.dense = dtype});
        EXPECT_EQ(model.weight_format().dense, dtype);
        EXPECT_THROW((void)model.checkpoint(), Error);
        Session session(model, SessionOptions{.max_tokens = 9});
        const auto ids = random_token_ids(8, model.config().vocab_size, 1);
        EXPECT_TRUE(session.forward(ids, Session::Logits::None).empty());
        const std::uint32_t one[] = {3};
        const auto logits = session.forward(one);
        ASSERT_EQ(logits.size(), model.config().vocab_size);
        EXPECT_TRUE(std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); }));
    }
}

TEST(ModelFiles, MalformedCheckpointsAreRefusedNamingTheFile) {
    MessageSink sink;
    Context ctx(test_options(sink));
    const TempModel files(small_bloom(), DType::F16, 1, 3);
    // A config whose width disagrees with the weights.
    {
        ModelConfig wrong = small_bloom();
        wrong.hidden = 512;
        wrong.head_dim = 64;
        wrong.ffn_hidden = 2048;
        std::ofstream(files.dir() / "config.json") << hf_config_json(wrong, DType::F16);
        try {
            const Model model(ctx, files.dir());
            FAIL() << "a config that does not match the weights was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("query_key_value"), std::string::npos) << e.what();
        }
    }
    // A truncated weights file.
    {
        std::ofstream(files.dir() / "config.json") << hf_config_json(small_bloom(), DType::F16);
        const fs::path weights = files.dir() / "model.safetensors";
        fs::resize_file(weights, fs::file_size(weights) / 2);
        try {
            const Model model(ctx, files.dir());
            FAIL() << "a truncated checkpoint was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
        }
    }
    // A head size the attention kernels do not have: an odd one (they take even sizes 2..256).
    {
        ModelConfig odd = small_bloom();
        odd.hidden = 255;
        odd.ffn_hidden = 4 * odd.hidden;
        odd.n_head = odd.n_kv_head = 15;  // head_dim 17
        odd.head_dim = 17;
        const TempModel other(odd, DType::F16, 1, 3);
        try {
            const Model model(ctx, other.dir());
            FAIL() << "head_dim 17 was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("head_dim 17 is not supported"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
