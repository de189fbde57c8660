// fp16 attention arithmetic inside a model session (issue 29): a GPU's model step runs the
// tiled attention kernel with fp32 Q/O over the fp16 KV cache in fp16 arithmetic (ARITH_F16,
// host/ops/attention.cpp). lavapipe plans its rows kernel instead; VKF_LIMITS=gpu_attention
// makes it plan attention as a GPU does, so this runs that path, prefill and decode, under
// validation, against the double-precision reference model (which keeps K and V in double).

#include "host/model/session.hpp"
#include "host/ops/matmul.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cstdio>

namespace vkf::test {
namespace {

std::uint32_t argmax(std::span<const float> row) {
    return static_cast<std::uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}
std::uint32_t argmax(std::span<const double> row) {
    return static_cast<std::uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// The fp16 cache's own bound (test_model's Fp16KvCacheMatchesTheReference, 2e-3): fp16
// arithmetic adds the roundings of the scaled Q, of the probabilities and of f16 sums of 8
// terms, each at most 2^-11 relative, which average out over keys and heads (printed below).
const double kTolerance = tolerance(DType::F16);

// test_model's small MPT with fp16 weights, clip_qkv 0.3 and an fp16 cache (the same
// pipelines but attention's, which Mesa's shader cache shares between the suites; its small
// BLOOM's logits barely move with attention's roundings: 9e-6): a 13-token prefill and 8
// greedy decode steps through the cache (q_len 1, kv_len up to 21). GQA, odd head sizes and
// split-KV decoding: test_attention_arith, on the same kernel variants.
// `limits`: VKF_LIMITS keys that plan lavapipe as a GPU; `tolerance` on every position's
// largest logit error relative to its largest logit.
void run_gpu_planned(const char* limits, double tolerance, const char* what) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse(limits)));
    if (!ctx.limits().fp16_arithmetic) {
        GTEST_SKIP() << "no fp16 arithmetic (shaderFloat16) on this device";
    }
    const ModelConfig config = small_mpt(false, 0.3);
    if (ctx.overrides().gpu_matmul) {
        // What the session's matmuls plan: GEMV_F16 decoding, TILED_F16 prefill.
        const MatmulDevice device = matmul_device(ctx);
        const MatmulPlan decode = plan_matmul(device, 1, 3 * config.hidden, config.hidden, DType::F16);
        EXPECT_TRUE(decode.kernel == MatmulKernel::Gemv && decode.f16_arithmetic) << decode.describe();
        const MatmulPlan prefill = plan_matmul(device, 13, config.ffn_hidden, config.hidden, DType::F16);
        EXPECT_TRUE(prefill.kernel == MatmulKernel::Tiled && prefill.f16_arithmetic) << prefill.describe();
    }
    const TempDir dir("vkf_test_model_f16_attention");
    write_random_checkpoint(dir.path(), config, 7, DType::F16, 1);
    const Model model(ctx, dir.path());

    constexpr std::uint32_t kPrompt = 13, kSteps = 8;
    const std::uint32_t vocab = config.vocab_size;
    std::vector<std::uint32_t> ids = random_token_ids(kPrompt, vocab, 11);
    Session session(model, SessionOptions{.max_tokens = kPrompt + kSteps, .kv_dtype = DType::F16});
    std::vector<float> gpu = session.forward(ids, Session::Logits::All);
    ASSERT_EQ(gpu.size(), std::size_t{kPrompt} * vocab);
    for (std::uint32_t s = 0; s < kSteps; ++s) {
        const std::uint32_t one[] = {argmax(std::span(gpu).last(vocab))};
        ids.push_back(one[0]);
        const std::vector<float> row = session.forward(one);
        ASSERT_EQ(row.size(), vocab);
        gpu.insert(gpu.end(), row.begin(), row.end());
    }

    const reference::Model reference(model.config(), model.checkpoint(),
                                     reference::ModelOptions{.round_weights_to_f16 = true});
    const std::vector<double> ref = reference.forward(ids);
    ASSERT_EQ(ref.size(), gpu.size());
    double worst[2] = {0.0, 0.0};  // the prompt's positions, the decode steps'
    for (std::uint32_t t = 0; t < kPrompt + kSteps; ++t) {
        const auto g = std::span<const float>(gpu).subspan(std::size_t{t} * vocab, vocab);
        const auto r = std::span<const double>(ref).subspan(std::size_t{t} * vocab, vocab);
        const ErrorStats e = compare_to_reference(g, r);
        EXPECT_LT(e.max_rel, tolerance) << "position " << t << ": " << describe(e);
        // The greedy id of every position (the decode inputs among them) is the reference's.
        EXPECT_EQ(argmax(g), argmax(r)) << "position " << t;
        double& w = worst[t < kPrompt ? 0 : 1];
        w = std::max(w, e.max_rel);
    }
    std::printf("%s: largest relative logit error %.3g over the prompt, %.3g over the decode steps\n", what, worst[0],
                worst[1]);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(ModelFp16Attention, TiledFp16ArithmeticMatchesTheReference) {
    run_gpu_planned("gpu_attention", kTolerance, "tiled attention, fp16 arithmetic over the fp16 cache");
}

// The matmuls planned as on a GPU too (VKF_LIMITS gpu_matmul): the prefill's matmuls in
// TILED_F16, every decode step's (QKV with the scatter, out-projection, FFN, LM head) in
// GEMV_F16, so the whole step is a GPU's fp16 arithmetic. Every matmul rounds its X to fp16
// (2^-11 relative) and the roundings of the 9 matmuls between the embedding and the
// logits add up: twice fp16's tolerance (measured: printed). Label full: 4.5 s of cold
// pipelines on Mesa 22.3.
TEST(ModelFp16Matmul, GpuDecodeKernelsMatchTheReferenceFull) {
    run_gpu_planned("gpu_attention,gpu_matmul", 2 * kTolerance, "GPU-planned matmuls and attention, fp16 arithmetic");
}

}  // namespace
}  // namespace vkf::test
