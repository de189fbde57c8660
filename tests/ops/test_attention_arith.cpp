// The tiled kernel's arithmetic variants (shaders/attention.comp): SUBGROUP_REDUCE (row max,
// sum and probability broadcasts by subgroup shuffles) and ARITH_F16 (fp16 Q*K and P*V with
// fp32 statistics). Where each is planned and forced off (VKF_LIMITS), odd shapes on every
// combination under validation, and fp16 arithmetic against the float64 reference on long rows
// and on large activations that overflow an fp16 q.k taken before the softmax scale. The grids
// of the other attention suites run the variants lavapipe gets by default (both on), and their
// spec_minimum runs the fallbacks (both off).

#include "tests/ops/attention_cases.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace vkf::test {
namespace {

struct ArithRun {
    ErrorStats error;
    AttentionPlan plan;
};

// Runs `params` on the tiled kernel over these inputs (already rounded to their storage) and
// compares with the float64 reference, the output poisoned first.
ArithRun run_tiled(Context& ctx, const AttentionParams& params, const std::vector<float>& q,
                   const std::vector<float>& k, const std::vector<float>& v, DType dtype,
                   std::uint32_t force_splits = 0) {
    const Attention op(ctx, params, dtype,
                       AttentionOptions{.force_splits = force_splits, .kernel = AttentionKernel::Tiled});
    const DeviceTensor qb = upload_tensor(ctx, q, dtype, "Q");
    const DeviceTensor kb = upload_tensor(ctx, k, dtype, "K");
    const DeviceTensor vb = upload_tensor(ctx, v, dtype, "V");
    const DeviceTensor ob = nan_tensor(ctx, q.size(), dtype, "O");
    auto list = ctx.command_list();
    op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
    ctx.submit(*list);
    const std::vector<float> out = download_tensor(ctx, ob);
    return ArithRun{compare_to_reference(out, reference::attention(params, q, k, v)), op.plan()};
}

ArithRun run_random(Context& ctx, const AttentionShape& shape, MaskMode mask, DType dtype, std::uint64_t seed,
                    float amplitude = 1.0f) {
    const AttentionParams params{.shape = shape, .mask = mask, .alibi = AlibiMode::Causal};
    const auto q = rounded_to(dtype, random_uniform(q_element_count(shape), seed, -amplitude, amplitude));
    const auto k = rounded_to(dtype, random_uniform(kv_element_count(shape), seed + 1, -amplitude, amplitude));
    const auto v = rounded_to(dtype, random_uniform(kv_element_count(shape), seed + 2, -1.0f, 1.0f));
    return run_tiled(ctx, params, q, k, v, dtype);
}

// fp16 arithmetic keeps fp16 storage's bound on both measures (tolerance(F16), 2e-3;
// docs/DESIGN.md, "fp16 arithmetic in attention"): storage alone rounds each output once
// (2^-12 relative, measured ~3e-4 here); the arithmetic adds the roundings of the scaled Q, of
// each probability and of the f16 sums of 8 products (scores) and of 8 terms (P*V), each at
// most 2^-11 relative, which average out over the keys rather than add up: measured 6e-4 to
// 1e-3 (printed below) from 70 keys to 8192, half the bound.
const double kFp16ArithmeticTolerance = tolerance(DType::F16);

void expect_within(const ArithRun& run, double tol, const char* what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(run.error.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << run.error.first_nonfinite;
    EXPECT_LT(run.error.max_rel, tol) << describe(run.error) << " plan: " << run.plan.describe();
    EXPECT_LT(run.error.rel_l2, tol) << describe(run.error);
    std::printf("%-34s %s; %s\n", what, describe(run.error).c_str(), run.plan.describe().c_str());
}

// The planner at every subgroup size a device may report (4..128): SUBGROUP_REDUCE where the
// device has subgroup arithmetic and shuffles and full subgroups of a known size (size
// control), threads_per_row divides the size and the size the workgroup; else shared memory.
TEST(AttentionArithmetic, SubgroupReductionsArePlannedForEverySubgroupSize) {
    ComputeLimits l{.shared_memory = 49152,
                    .workgroup_invocations = 1024,
                    .workgroup_size = {1024, 1024, 64},
                    .workgroup_count = {65535, 65535, 65535},
                    .push_constants = 128,
                    .storage_buffer_range = 1ull << 30,
                    .storage_offset_alignment = 16,
                    .storage_buffers = 8,
                    .subgroup_size = 0,
                    .subgroup_ops = true,
                    .subgroup_size_control = true};
    for (std::uint32_t sg : {4u, 8u, 16u, 32u, 64u, 128u}) {
        l.subgroup_size = sg;
        for (const AttentionShape& shape : {AttentionShape{1, 200, 300, 4, 4, 64}, AttentionShape{1, 1, 300, 4, 4, 64},
                                            AttentionShape{1, 3, 300, 4, 4, 256}}) {
            const AttentionPlan p = plan_attention(l, shape);
            const bool fits = sg % p.threads_per_row == 0 && p.workgroup_size % sg == 0;
            EXPECT_EQ(p.subgroup_reduce, fits ? sg : 0u) << sg << ": " << p.describe();
            if (sg == 32 && shape.q_len == 200) {
                EXPECT_EQ(p.subgroup_reduce, 32u) << "a GPU's subgroup of 32 and 8 lanes per row";
            }
        }
    }
    const AttentionShape shape{1, 200, 300, 4, 4, 64};
    l.subgroup_size = 32;
    l.subgroup_ops = false;
    EXPECT_EQ(plan_attention(l, shape).subgroup_reduce, 0u) << "no_subgroup_ops";
    l.subgroup_ops = true;
    l.subgroup_size_control = false;
    EXPECT_EQ(plan_attention(l, shape).subgroup_reduce, 0u) << "no_subgroup_size_control";
    l.subgroup_size_control = true;
    l.subgroup_size = 24;  // not a power of two: no butterfly
    EXPECT_EQ(plan_attention(l, shape).subgroup_reduce, 0u);
}

// On this device and with each path forced off (VKF_LIMITS): what the op chooses (fp16
// arithmetic for all-fp16 tensors where shaderFloat16 is on) and odd shapes on it, under
// validation: GQA, q_len != kv_len, a head size whose pairs no row of 8 lanes splits evenly,
// split-KV decoding at a 4n + 2 head size. On lavapipe (subgroups of 8, fp16 arithmetic) the
// three runs are: both paths, fp16 with shared-memory reductions, subgroups with fp32
// arithmetic; the other suites' grids run both on, and their spec_minimum runs both off.
TEST(AttentionArithmetic, EachPathAndItsFallbackMatchOnOddShapes) {
    std::uint64_t seed = 9100;
    for (const char* spec : {"", "no_subgroup_ops", "no_fp16_arithmetic"}) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        const ComputeLimits& l = ctx.limits();
        const ArithRun r = run_random(ctx, AttentionShape{2, 7, 70, 6, 3, 72}, MaskMode::Causal, DType::F16, seed++);
        expect_within(r, kFp16ArithmeticTolerance, "odd shape");
        EXPECT_EQ(r.plan.fp16_arithmetic, l.fp16_arithmetic) << r.plan.describe();
        const bool divides =
            l.subgroup_size % r.plan.threads_per_row == 0 && r.plan.workgroup_size % l.subgroup_size == 0;
        EXPECT_EQ(r.plan.subgroup_reduce, l.subgroup_ops && l.subgroup_size_control && divides ? l.subgroup_size : 0u)
            << r.plan.describe();
        if (std::string_view(spec) == "no_subgroup_ops") {
            EXPECT_EQ(r.plan.subgroup_reduce, 0u);
        } else if (std::string_view(spec) == "no_fp16_arithmetic") {
            EXPECT_FALSE(r.plan.fp16_arithmetic);
        }
        const ArithRun d = run_random(ctx, AttentionShape{1, 3, 301, 4, 1, 18}, MaskMode::None, DType::F16, seed++);
        expect_within(d, kFp16ArithmeticTolerance, "decode, head 18");
        // fp32 tensors keep fp32 arithmetic (and its bound) on every device.
        if (spec[0] == '\0') {
            const ArithRun f =
                run_random(ctx, AttentionShape{2, 7, 70, 6, 3, 72}, MaskMode::Causal, DType::F32, seed++);
            expect_within(f, tolerance(DType::F32), "odd shape, fp32");
            EXPECT_FALSE(f.plan.fp16_arithmetic);
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

// Long rows: every query row sees up to L keys, so fp16 roundings of scores, probabilities and
// P*V sums meet as many terms as a long context gives them. L = 8192 is in the `full` label.
void long_rows(std::uint32_t kv_len, std::uint64_t seed) {
    MessageSink sink;
    Context ctx(test_options(sink));
    if (!ctx.limits().fp16_arithmetic) {
        GTEST_SKIP() << "no fp16 arithmetic (shaderFloat16) on this device";
    }
    const ArithRun r = run_random(ctx, AttentionShape{1, 16, kv_len, 2, 1, 64}, MaskMode::Causal, DType::F16, seed);
    EXPECT_TRUE(r.plan.fp16_arithmetic);
    expect_within(r, kFp16ArithmeticTolerance, ("long rows, L " + std::to_string(kv_len)).c_str());
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(AttentionArithmetic, Fp16ArithmeticStaysWithinTolerance_LongRows) {
    long_rows(2048, 9200);
}

TEST(AttentionArithmetic, Fp16ArithmeticStaysWithinTolerance_LongRows8192) {
    long_rows(8192, 9300);
}

// Large activations: |q|, |k| and |v| ~ 20-30 with each key equal to its query row (self
// attention on a large residual stream), head size 128: q.k on the diagonal is ~83000,
// past fp16's 65504, and its scaled score ~7300 (ulp 4 in fp16). With Q scaled first and
// f16 sums of 8 products the kernel stays finite and within tolerance; the softmax is nearly
// one-hot, so a wrong score shows as a wrong row.
TEST(AttentionArithmetic, Fp16ArithmeticDoesNotOverflowOnLargeActivations) {
    MessageSink sink;
    Context ctx(test_options(sink));
    const AttentionShape shape{1, 97, 97, 2, 2, 128};
    const AttentionParams params{.shape = shape, .mask = MaskMode::Causal, .alibi = AlibiMode::Causal};
    std::vector<float> q = random_uniform(q_element_count(shape), 9400, 20.0f, 30.0f);
    const std::vector<float> sign = random_uniform(q.size(), 9401, -1.0f, 1.0f);
    for (std::size_t i = 0; i < q.size(); ++i) {
        q[i] = sign[i] < 0 ? -q[i] : q[i];
    }
    q = rounded_to(DType::F16, q);
    const auto v = rounded_to(DType::F16, random_uniform(kv_element_count(shape), 9402, -30.0f, 30.0f));
    const ArithRun r = run_tiled(ctx, params, q, q, v, DType::F16);
    EXPECT_EQ(r.plan.fp16_arithmetic, ctx.limits().fp16_arithmetic);
    expect_within(r, kFp16ArithmeticTolerance, "large activations");
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
