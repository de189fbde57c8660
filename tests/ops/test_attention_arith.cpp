// The tiled kernel's arithmetic variants (shaders/attention.comp): SUBGROUP_REDUCE (row max,
// sum and probability broadcasts by subgroup shuffles; SUBGROUP_ANY_SIZE, its form for devices
// without size control, with the in-shader check and the shared-memory fallback) and ARITH_F16
// (fp16 Q*K and P*V with fp32 statistics). Where each is planned and forced off (VKF_LIMITS), odd shapes on every
// combination under validation, and fp16 arithmetic against the float64 reference on long rows
// and on large activations that overflow an fp16 q.k taken before the softmax scale. The grids
// of the other attention suites run the variants lavapipe gets by default (both on), and their
// spec_minimum runs the fallbacks (both off).

#include "tests/ops/attention_cases.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
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
// K and V in kv_dtype (unset: dtype).
// `options`: the rest (subgroup tests).
ArithRun run_tiled(Context& ctx, const AttentionParams& params, const std::vector<float>& q,
                   const std::vector<float>& k, const std::vector<float>& v, DType dtype,
                   std::uint32_t force_splits = 0, std::optional<DType> kv_dtype = std::nullopt,
                   AttentionOptions options = {}) {
    const DType kv = kv_dtype.value_or(dtype);
    options.force_splits = force_splits;
    options.kernel = AttentionKernel::Tiled;
    options.kv_dtype = kv;
    const Attention op(ctx, params, dtype, options);
    const DeviceTensor qb = upload_tensor(ctx, q, dtype, "Q");
    const DeviceTensor kb = upload_tensor(ctx, k, kv, "K");
    const DeviceTensor vb = upload_tensor(ctx, v, kv, "V");
    const DeviceTensor ob = nan_tensor(ctx, q.size(), dtype, "O");
    auto list = ctx.command_list();
    op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
    ctx.submit(*list);
    const std::vector<float> out = download_tensor(ctx, ob);
    return ArithRun{compare_to_reference(out, reference::attention(params, q, k, v)), op.plan()};
}

ArithRun run_random(Context& ctx, const AttentionShape& shape, MaskMode mask, DType dtype, std::uint64_t seed,
                    std::uint32_t force_splits = 0, std::optional<DType> kv_dtype = std::nullopt,
                    const AttentionOptions& options = {}) {
    const DType kv = kv_dtype.value_or(dtype);
    const AttentionParams params{.shape = shape, .mask = mask, .alibi = AlibiMode::Causal};
    const auto q = rounded_to(dtype, random_uniform(q_element_count(shape), seed, -1.0f, 1.0f));
    const auto k = rounded_to(kv, random_uniform(kv_element_count(shape), seed + 1, -1.0f, 1.0f));
    const auto v = rounded_to(kv, random_uniform(kv_element_count(shape), seed + 2, -1.0f, 1.0f));
    return run_tiled(ctx, params, q, k, v, dtype, force_splits, kv_dtype, options);
}

// fp16 arithmetic keeps fp16 storage's bound on both measures (tolerance(F16), 2e-3;
// docs/DESIGN.md, "fp16 arithmetic in attention"): storage alone rounds each output once
// (2^-12 relative, measured ~3e-4 here); the arithmetic adds the roundings of the scaled Q, of
// each probability and of the f16 sums of 8 products (scores) and of 8 terms (P*V), each at
// most 2^-11 relative, which average out over the keys rather than add up: measured 4e-4 to
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
ComputeLimits gpu_limits() {
    return ComputeLimits{.shared_memory = 49152,
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
}
const AttentionShape kPlannerShapes[] = {{1, 200, 300, 4, 4, 64}, {1, 1, 300, 4, 4, 64}, {1, 3, 300, 4, 4, 256}};

TEST(AttentionArithmetic, SubgroupReductionsArePlannedForEverySubgroupSize) {
    ComputeLimits l = gpu_limits();
    for (std::uint32_t sg : {4u, 8u, 16u, 32u, 64u, 128u}) {
        l.subgroup_size = sg;
        for (const AttentionShape& shape : kPlannerShapes) {
            const AttentionPlan p = plan_attention(l, shape);
            const bool fits = sg % p.threads_per_row == 0 && p.workgroup_size % sg == 0;
            EXPECT_EQ(p.subgroup_reduce, fits ? sg : 0u) << sg << ": " << p.describe();
            EXPECT_FALSE(p.subgroup_any_size) << "size control: the required size, no check";
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

// Without size control (most Vulkan 1.1 phones): SUBGROUP_ANY_SIZE, no required size, where the
// reported size would pass the kernel's check (threads_per_row divides it, it the workgroup);
// shared memory elsewhere and without subgroup arithmetic and shuffles. Forced (tests): wherever
// the device has those. The check's flag costs 4 bytes of shared memory, and where they do not
// fit the plan keeps the shared-memory path.
TEST(AttentionArithmetic, CheckedSubgroupReductionsArePlannedWithoutSizeControl) {
    ComputeLimits l = gpu_limits();
    l.subgroup_size_control = false;
    for (std::uint32_t sg : {4u, 8u, 16u, 32u, 64u, 128u}) {
        l.subgroup_size = sg;
        for (const AttentionShape& shape : kPlannerShapes) {
            const AttentionPlan p = plan_attention(l, shape);
            const bool fits = sg % p.threads_per_row == 0 && p.workgroup_size % sg == 0;
            EXPECT_EQ(p.subgroup_reduce, 0u) << sg << ": " << p.describe();
            EXPECT_EQ(p.subgroup_any_size, fits) << sg << ": " << p.describe();
            ComputeLimits no_ops = l;
            no_ops.subgroup_ops = false;
            const AttentionPlan shared = plan_attention(no_ops, shape);
            EXPECT_FALSE(shared.subgroup_any_size);
            EXPECT_EQ(p.shared_bytes, shared.shared_bytes + (fits ? 4u : 0u)) << p.describe();
            if (sg == 64 && shape.q_len == 200) {
                EXPECT_TRUE(p.subgroup_any_size) << "Adreno's wave64, 8 lanes per row";
            }
        }
    }
    const AttentionShape shape = kPlannerShapes[0];
    l.subgroup_size = 16;
    const AttentionPlan p = plan_attention(l, shape);
    ASSERT_TRUE(p.subgroup_any_size);
    ComputeLimits tight = l;
    tight.shared_memory = p.shared_bytes - 4;  // the same tile, but not the flag
    const AttentionPlan q = plan_attention(tight, shape);
    EXPECT_EQ(q.workgroup_size, p.workgroup_size);
    EXPECT_FALSE(q.subgroup_any_size) << q.describe();
    l.subgroup_size = 24;  // not a power of two
    EXPECT_FALSE(plan_attention(l, shape).subgroup_any_size);
    const AttentionOptions forced{.force_subgroup_any_size = true};
    EXPECT_TRUE(plan_attention(l, shape, forced).subgroup_any_size) << "forced: the kernel checks";
    l.subgroup_size = 32;
    l.subgroup_size_control = true;
    const AttentionPlan f = plan_attention(l, shape, forced);
    EXPECT_TRUE(f.subgroup_any_size);
    EXPECT_EQ(f.subgroup_reduce, 0u) << "never both";
    l.subgroup_ops = false;
    EXPECT_FALSE(plan_attention(l, shape, forced).subgroup_any_size) << "no subgroup arithmetic or shuffles";
}

// Shapes whose pipelines the tests below share (on lavapipe CI's cost is compiling them): an odd
// prefill (GQA, q_len != kv_len, a head size whose pairs no row of 8 lanes splits evenly) and
// split-KV decoding at a 4n + 2 head size with its combine pass.
const AttentionShape kOddShape{2, 7, 70, 6, 3, 72};
AttentionShape decode_shape(std::uint32_t kv_len) {
    return AttentionShape{1, 3, kv_len, 4, 1, 18};
}
constexpr std::uint32_t kDecodeSplits = 3;

class AttentionArith : public VulkanTest {};

// With each path forced off (VKF_LIMITS): what the op chooses and the odd shape on it, under
// validation. On lavapipe (subgroups of 8, fp16 arithmetic) the two runs are fp16 arithmetic
// with shared-memory reductions and subgroup reductions with fp32 arithmetic; the suite's
// other tests (and the other suites' grids) run both on, the spec_minimum runs both off.
TEST(AttentionArithmetic, EachFallbackMatchesOnAnOddShape) {
    std::uint64_t seed = 9100;
    for (const char* spec : {"no_subgroup_ops", "no_fp16_arithmetic"}) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        const ComputeLimits& l = ctx.limits();
        const ArithRun r = run_random(ctx, kOddShape, MaskMode::Causal, DType::F16, seed++);
        expect_within(r, kFp16ArithmeticTolerance, "odd shape");
        EXPECT_EQ(r.plan.fp16_arithmetic, l.fp16_arithmetic) << r.plan.describe();
        const bool divides =
            l.subgroup_size % r.plan.threads_per_row == 0 && r.plan.workgroup_size % l.subgroup_size == 0;
        EXPECT_EQ(r.plan.subgroup_reduce, l.subgroup_ops && l.subgroup_size_control && divides ? l.subgroup_size : 0u)
            << r.plan.describe();
        if (std::string_view(spec) == "no_subgroup_ops") {
            EXPECT_EQ(r.plan.subgroup_reduce, 0u);
        } else {
            EXPECT_FALSE(r.plan.fp16_arithmetic);
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

// Both paths where the device has them: the odd shape and split-KV decoding.
TEST_F(AttentionArith, BothPathsMatchOnOddShapes) {
    const ComputeLimits& l = ctx().limits();
    const ArithRun r = run_random(ctx(), kOddShape, MaskMode::Causal, DType::F16, 9110);
    expect_within(r, kFp16ArithmeticTolerance, "odd shape");
    EXPECT_EQ(r.plan.fp16_arithmetic, l.fp16_arithmetic) << r.plan.describe();
    if (l.subgroup_ops && l.subgroup_size_control && l.subgroup_size == 8) {
        EXPECT_EQ(r.plan.subgroup_reduce, 8u) << "lavapipe: subgroups of 8, 8 lanes per row";
    }
    const ArithRun d = run_random(ctx(), decode_shape(301), MaskMode::None, DType::F16, 9111, kDecodeSplits);
    expect_within(d, kFp16ArithmeticTolerance, "split decode, head 18");
    EXPECT_GT(d.plan.n_splits, 1u);
}

// Whether SUBGROUP_ANY_SIZE's check passes for this plan on full subgroups of the device's
// reported size (what lavapipe runs, and GPUs on workgroups that are a multiple of it).
std::uint32_t expected_subgroup_path(const ComputeLimits& l, const AttentionPlan& p) {
    const bool holds = l.subgroup_size % p.threads_per_row == 0 && p.workgroup_size % l.subgroup_size == 0;
    return holds ? VKF_ATTN_SG_EXPECT_SUBGROUP : VKF_ATTN_SG_EXPECT_SHARED;
}

// VKF_LIMITS=no_subgroup_size_control: the checked variant, created without a required size,
// on the odd prefill (causal) and split-KV decoding (no mask, head 18) with its combine pass.
// Each workgroup must take the subgroup path (lavapipe: full subgroups of 8, 8 lanes per row):
// one whose check failed would write nothing, and the NaN-poisoned output would show it.
TEST(AttentionArithmetic, CheckedSubgroupReductionsMatchWithoutSizeControl) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_size_control")));
    const ComputeLimits& l = ctx.limits();
    if (!plan_attention(attention_device(ctx), kOddShape, AttentionOptions{.kernel = AttentionKernel::Tiled})
             .subgroup_any_size) {
        GTEST_SKIP() << "no subgroup arithmetic and shuffles, or a subgroup size of " << l.subgroup_size
                     << " that 8 lanes per row and the workgroup do not suit (lavapipe's 8 does)";
    }
    const AttentionOptions expect{.expect_subgroup_path = VKF_ATTN_SG_EXPECT_SUBGROUP};
    const ArithRun r = run_random(ctx, kOddShape, MaskMode::Causal, DType::F16, 9120, 0, std::nullopt, expect);
    expect_within(r, kFp16ArithmeticTolerance, "checked subgroups, odd shape");
    EXPECT_EQ(r.plan.subgroup_reduce, 0u);
    EXPECT_TRUE(r.plan.subgroup_any_size) << r.plan.describe();
    EXPECT_EQ(expected_subgroup_path(l, r.plan), VKF_ATTN_SG_EXPECT_SUBGROUP);
    const ArithRun d =
        run_random(ctx, decode_shape(301), MaskMode::None, DType::F16, 9121, kDecodeSplits, std::nullopt, expect);
    expect_within(d, kFp16ArithmeticTolerance, "checked subgroups, split decode");
    EXPECT_TRUE(d.plan.subgroup_any_size) << d.plan.describe();
    EXPECT_GT(d.plan.n_splits, 1u);
    EXPECT_EQ(sink.validation_count(), 0u);
}

// The check's fallback: the variant forced on decoding tiles whose rows the subgroups cannot
// hold. 32 lanes per row (one row of 32 invocations) in subgroups of 8 (lavapipe): rows span
// subgroups, the check fails, and every workgroup must take shared memory (one that took the
// shuffles would write nothing). On a device whose size serves the tile, the subgroup path.
TEST_F(AttentionArith, CheckedSubgroupReductionsFallBackWhereRowsSpanSubgroups) {
    const ComputeLimits& l = ctx().limits();
    if (!l.subgroup_ops) {
        GTEST_SKIP() << "no subgroup arithmetic and shuffles";
    }
    const AttentionShape shape{1, 1, 301, 4, 1, 18};
    AttentionOptions options{.force_subgroup_any_size = true};
    const AttentionPlan plan =
        plan_attention(attention_device(ctx()), shape,
                       AttentionOptions{.kernel = AttentionKernel::Tiled, .force_subgroup_any_size = true});
    options.expect_subgroup_path = expected_subgroup_path(l, plan);
    if (l.subgroup_size == 8) {
        EXPECT_EQ(plan.threads_per_row, 32u) << plan.describe();
        EXPECT_EQ(options.expect_subgroup_path, VKF_ATTN_SG_EXPECT_SHARED);
    }
    const ArithRun r = run_random(ctx(), shape, MaskMode::None, DType::F16, 9130, 0, std::nullopt, options);
    EXPECT_TRUE(r.plan.subgroup_any_size) << r.plan.describe();
    expect_within(r, kFp16ArithmeticTolerance, "checked subgroups, rows span them");
}

// Partial subgroups: a workgroup of 4 invocations (VKF_LIMITS) in subgroups of 8 (lavapipe)
// fails the check (gl_NumSubgroups * gl_SubgroupSize != 4) and takes shared memory.
TEST(AttentionArithmetic, CheckedSubgroupReductionsFallBackOnPartialSubgroups_Full) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_size_control,workgroup_invocations=4")));
    const ComputeLimits& l = ctx.limits();
    if (!l.subgroup_ops || l.subgroup_size <= 4) {
        GTEST_SKIP() << "no subgroup arithmetic and shuffles, or subgroups of 4 invocations or fewer";
    }
    const AttentionOptions options{.force_subgroup_any_size = true, .expect_subgroup_path = VKF_ATTN_SG_EXPECT_SHARED};
    const ArithRun r = run_random(ctx, kOddShape, MaskMode::Causal, DType::F16, 9140, 0, std::nullopt, options);
    EXPECT_TRUE(r.plan.subgroup_any_size) << r.plan.describe();
    EXPECT_LE(r.plan.workgroup_size, 4u);
    expect_within(r, kFp16ArithmeticTolerance, "checked subgroups, partial");
    EXPECT_EQ(sink.validation_count(), 0u);
}

// fp32 Q/O over an fp16 K/V cache (every model session's attention): fp16 arithmetic on
// GPUs, fp32 on CPU devices unless VKF_LIMITS=gpu_attention plans them as GPUs (the op's
// choice: llvmpipe emulates fp16). The odd prefill (GQA, q_len != kv_len, head 72) and
// split-KV decoding (head 18, 4n + 2) under `spec`; fp32 arithmetic stays within fp32's bound
// over the same rounded K/V (measured ~1e-7), fp16 arithmetic within fp16's (5e-4 .. 9e-4), so
// a plan that took the wrong one fails. Paged batches run the same kernel (a flag, no variant
// of their own): test_model_attention_f16 and the model suites run them. `decode`: the CPU
// default (no gpu_attention) checks its choice on the prefill alone.
void check_fp32_queries_over_fp16_cache(const char* spec, bool fp16_wanted, bool decode, std::uint64_t seed) {
    SCOPED_TRACE(spec);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse(spec)));
    const bool fp16 = fp16_wanted && ctx.limits().fp16_arithmetic;
    const double tol = fp16 ? kFp16ArithmeticTolerance : tolerance(DType::F32);
    const ArithRun r = run_random(ctx, kOddShape, MaskMode::Causal, DType::F32, seed, 0, DType::F16);
    EXPECT_EQ(r.plan.fp16_arithmetic, fp16) << r.plan.describe();
    expect_within(r, tol, fp16 ? "f32 Q/O, f16 K/V, fp16 arith" : "f32 Q/O, f16 K/V, fp32 arith");
    if (decode) {
        const ArithRun d =
            run_random(ctx, decode_shape(301), MaskMode::None, DType::F32, seed + 10, kDecodeSplits, DType::F16);
        EXPECT_EQ(d.plan.fp16_arithmetic, fp16) << d.plan.describe();
        EXPECT_GT(d.plan.n_splits, 1u);
        expect_within(d, tol, "f32 Q/O, f16 K/V, split decode");
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(AttentionArithmetic, Fp32QueriesOverAnFp16CacheTakeFp16ArithmeticOnGpus) {
    check_fp32_queries_over_fp16_cache("gpu_attention", true, true, 9500);
}

// The fp32 arithmetic over the same tensors (label full: 2 more cold pipelines on Mesa 22.3):
// forced off, and the CPU device's own choice (on a GPU the same plan as above).
TEST(AttentionArithmetic, Fp32QueriesOverAnFp16CacheKeepFp32WhereAsked_Full) {
    check_fp32_queries_over_fp16_cache("gpu_attention,no_fp16_arithmetic", false, true, 9600);
    MessageSink sink;
    const bool cpu = Context(test_options(sink)).device_info().type == DeviceType::Cpu;
    check_fp32_queries_over_fp16_cache("", !cpu, false, 9700);
}

// Quantized K/V caches (q8_0 K over q4_0 V, and q4_0 K over fp16 V) through the tiled
// kernel's variants under `spec`: fp16 arithmetic and subgroup reductions where planned
// (gpu_attention on lavapipe: both), the checked subgroup form (no size control), and the
// fp32, shared-memory fallbacks. The values a block stands for are exact in fp32, so the
// bound is the arithmetic's own: fp32's, or fp16's where the plan took fp16 arithmetic.
void check_quantized_kv(const char* spec, std::uint64_t seed) {
    SCOPED_TRACE(spec);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse(spec)));
    const AttentionShape shapes[] = {{2, 37, 70, 6, 3, 64}, {2, 1, 301, 4, 1, 96}};
    const std::pair<QuantFormat, QuantFormat> formats[] = {{QuantFormat::Q8_0, QuantFormat::Q4_0},
                                                           {QuantFormat::Q4_0, QuantFormat::None}};
    for (std::size_t i = 0; i < std::size(shapes); ++i) {
        const AttentionShape& shape = shapes[i];
        const AttentionParams params{.shape = shape, .mask = MaskMode::Causal, .alibi = AlibiMode::Causal};
        const auto [kq, vq] = formats[i];
        const auto q = random_uniform(q_element_count(shape), seed + 3 * i, -1.0f, 1.0f);
        const StoredKv k = store_kv(ctx, random_uniform(kv_element_count(shape), seed + 3 * i + 1, -1.0f, 1.0f),
                                    DType::F16, kq, shape.n_kv_head * shape.head_dim, "K");
        const StoredKv v = store_kv(ctx, random_uniform(kv_element_count(shape), seed + 3 * i + 2, -1.0f, 1.0f),
                                    DType::F16, vq, shape.n_kv_head * shape.head_dim, "V");
        const Attention op(ctx, params, DType::F32,
                           AttentionOptions{.force_splits = i == 1 ? kDecodeSplits : 0,
                                            .kernel = AttentionKernel::Tiled,
                                            .k_quant = kq,
                                            .v_quant = vq});
        const DeviceTensor qb = upload_tensor(ctx, q, DType::F32, "Q");
        const DeviceTensor ob = nan_tensor(ctx, q.size(), DType::F32, "O");
        auto list = ctx.command_list();
        op.record(*list, qb.range(), k.tensor.range(), v.tensor.range(), ob.range());
        ctx.submit(*list);
        const ArithRun r{
            compare_to_reference(download_tensor(ctx, ob), reference::attention(params, q, k.values, v.values)),
            op.plan()};
        expect_within(r, r.plan.fp16_arithmetic ? kFp16ArithmeticTolerance : tolerance(DType::F32),
                      i == 0 ? "quantized K/V, prefill" : "quantized K/V, split decode");
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(AttentionArithmetic, QuantizedKvInEveryArithmeticAndReduction) {
    check_quantized_kv("gpu_attention", 9800);
    check_quantized_kv("gpu_attention,no_subgroup_size_control", 9810);
    check_quantized_kv("gpu_attention,no_subgroup_ops,no_fp16_arithmetic", 9820);
}

// Long rows: every query row sees up to L keys, so fp16 roundings of scores, probabilities and
// P*V sums meet as many terms as a long context gives them. The quick one shares the decode
// pipelines above; L = 8192 at head size 128 is in the `full` label.
TEST_F(AttentionArith, Fp16ArithmeticStaysWithinTolerance_LongRows) {
    if (!ctx().limits().fp16_arithmetic) {
        GTEST_SKIP() << "no fp16 arithmetic (shaderFloat16) on this device";
    }
    const ArithRun r = run_random(ctx(), decode_shape(2048), MaskMode::Causal, DType::F16, 9200, kDecodeSplits);
    EXPECT_TRUE(r.plan.fp16_arithmetic);
    expect_within(r, kFp16ArithmeticTolerance, "long rows, L 2048");
}

TEST_F(AttentionArith, Fp16ArithmeticStaysWithinTolerance_LongRows8192) {
    if (!ctx().limits().fp16_arithmetic) {
        GTEST_SKIP() << "no fp16 arithmetic (shaderFloat16) on this device";
    }
    const ArithRun r = run_random(ctx(), AttentionShape{1, 16, 8192, 2, 1, 128}, MaskMode::Causal, DType::F16, 9300);
    EXPECT_TRUE(r.plan.fp16_arithmetic);
    expect_within(r, kFp16ArithmeticTolerance, "long rows, L 8192");
}

// Large activations: |q| = |k| ~ 30-40 and |v| up to 30 on the odd shape, each query row's own
// position holding a key equal to it (self attention on a large residual stream): q.k there is
// ~88000, past fp16's 65504, and its scaled score ~10000 (ulp 8 in fp16). With Q scaled first
// and f16 sums of 8 products the kernel stays finite and within tolerance; the softmax is
// nearly one-hot on that key, so a wrong score shows as a wrong row.
TEST_F(AttentionArith, Fp16ArithmeticDoesNotOverflowOnLargeActivations) {
    const AttentionShape shape = kOddShape;
    const AttentionParams params{.shape = shape, .mask = MaskMode::Causal, .alibi = AlibiMode::Causal};
    const std::uint32_t d = shape.head_dim;
    auto large = [](std::size_t n, std::uint64_t seed) {
        std::vector<float> x = random_uniform(n, seed, 30.0f, 40.0f);
        const std::vector<float> sign = random_uniform(n, seed + 1, -1.0f, 1.0f);
        for (std::size_t i = 0; i < n; ++i) {
            x[i] = sign[i] < 0 ? -x[i] : x[i];
        }
        return rounded_to(DType::F16, x);
    };
    std::vector<float> q = large(q_element_count(shape), 9400);
    std::vector<float> k = large(kv_element_count(shape), 9402);
    // Query heads 2g and 2g + 1 share KV head g: both get the same row, which key
    // kv_len - q_len + i (row i's own position) of KV head g repeats.
    for (std::uint32_t b = 0; b < shape.batch; ++b) {
        for (std::uint32_t i = 0; i < shape.q_len; ++i) {
            for (std::uint32_t g = 0; g < shape.n_kv_head; ++g) {
                const std::size_t q0 = ((std::size_t{b} * shape.q_len + i) * shape.n_head + 2 * g) * d;
                const std::size_t k0 =
                    ((std::size_t{b} * shape.kv_len + shape.kv_len - shape.q_len + i) * shape.n_kv_head + g) * d;
                for (std::uint32_t e = 0; e < d; ++e) {
                    q[q0 + d + e] = q[q0 + e];
                    k[k0 + e] = q[q0 + e];
                }
            }
        }
    }
    const auto v = rounded_to(DType::F16, random_uniform(kv_element_count(shape), 9404, -30.0f, 30.0f));
    const ArithRun r = run_tiled(ctx(), params, q, k, v, DType::F16);
    EXPECT_EQ(r.plan.fp16_arithmetic, ctx().limits().fp16_arithmetic);
    expect_within(r, kFp16ArithmeticTolerance, "large activations");
}

}  // namespace
}  // namespace vkf::test
