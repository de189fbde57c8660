// Tiled ALiBi attention against the double-precision CPU reference: seeded random inputs
// over a grid of shapes and modes, the storage types (all fp32, all fp16, and fp32 Q/O with
// an fp16 K/V cache), forced smaller device limits and the split-KV path, with outputs
// poisoned before every run.

#include "host/ops/attention.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/reference/attention.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace vkf::test {
namespace {

struct Case {
    std::uint32_t batch, q_len, kv_len, n_head, n_kv_head, head_dim;
    MaskMode mask;
    AlibiMode alibi;
    DType dtype;
    bool slope_table = false;
    bool kv_lens = false;
    std::uint32_t force_splits = 0;
    float max_bias = 8.0f;
    AttentionKernel kernel = AttentionKernel::Auto;
    std::optional<DType> kv_dtype = std::nullopt;  // K/V storage; unset: dtype
};

// The storage combinations the kernels support: Q/O dtype, and K/V dtype where it differs.
struct Storage {
    DType dtype;
    std::optional<DType> kv_dtype;
};
const Storage kStorages[] = {{DType::F32, std::nullopt}, {DType::F16, std::nullopt}, {DType::F32, DType::F16}};

// `c` with fp32 Q/O and an fp16 K/V cache, as a model session stores them.
Case with_f16_kv(Case c) {
    c.dtype = DType::F32;
    c.kv_dtype = DType::F16;
    return c;
}

Case in(const Storage& storage, Case c) {
    c.dtype = storage.dtype;
    c.kv_dtype = storage.kv_dtype;
    return c;
}

std::string name(const Case& c) {
    return "b" + std::to_string(c.batch) + " q" + std::to_string(c.q_len) + " kv" + std::to_string(c.kv_len) + " h" +
           std::to_string(c.n_head) + "/" + std::to_string(c.n_kv_head) + " d" + std::to_string(c.head_dim) +
           (c.mask == MaskMode::Causal ? " causal" : " nomask") +
           (c.alibi == AlibiMode::Off      ? " noalibi"
            : c.alibi == AlibiMode::Causal ? " alibi-c"
                                           : " alibi-s") +
           " " + to_string(c.dtype) + (c.kv_dtype ? std::string(" kv ") + to_string(*c.kv_dtype) : "") +
           (c.slope_table ? " table" : "") + (c.kv_lens ? " kvlens" : "") +
           (c.force_splits ? " splits" + std::to_string(c.force_splits) : "") +
           (c.kernel != AttentionKernel::Auto ? std::string(" ") + to_string(c.kernel) : "");
}

// Runs one case on `ctx` and checks it against the reference; returns the plan used.
AttentionPlan run_case(Context& ctx, const Case& c, std::uint64_t seed) {
    SCOPED_TRACE(name(c));
    const AttentionShape shape{c.batch, c.q_len, c.kv_len, c.n_head, c.n_kv_head, c.head_dim};
    std::vector<float> slopes;
    if (c.slope_table) {
        slopes = random_uniform(c.n_head, seed + 7, 0.01f, 1.0f);
    }
    std::vector<std::uint32_t> kv_lens;
    if (c.kv_lens) {
        for (std::uint32_t b = 0; b < c.batch; ++b) {
            kv_lens.push_back(c.kv_len - (b * 37 + 3) % c.kv_len);  // 1..kv_len, some rows fully masked
        }
    }
    const AttentionParams params{
        .shape = shape, .mask = c.mask, .alibi = c.alibi, .max_bias = c.max_bias, .slopes = slopes, .kv_lens = kv_lens};
    // The reference sees exactly what the GPU reads.
    const DType kv_dtype = c.kv_dtype.value_or(c.dtype);
    const auto q = rounded_to(c.dtype, random_uniform(q_element_count(shape), seed, -1.0f, 1.0f));
    const auto k = rounded_to(kv_dtype, random_uniform(kv_element_count(shape), seed + 1, -1.0f, 1.0f));
    const auto v = rounded_to(kv_dtype, random_uniform(kv_element_count(shape), seed + 2, -1.0f, 1.0f));
    const Attention op(ctx, params, c.dtype,
                       AttentionOptions{.force_splits = c.force_splits, .kernel = c.kernel, .kv_dtype = c.kv_dtype});
    EXPECT_EQ(op.kv_dtype(), kv_dtype);
    const DeviceTensor qb = upload_tensor(ctx, q, c.dtype, "Q");
    const DeviceTensor kb = upload_tensor(ctx, k, kv_dtype, "K");
    const DeviceTensor vb = upload_tensor(ctx, v, kv_dtype, "V");
    const DeviceTensor ob = nan_tensor(ctx, q.size(), c.dtype, "O");
    auto list = ctx.command_list();
    op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
    ctx.submit(*list);
    const std::vector<float> out = download_tensor(ctx, ob);
    const auto ref = reference::attention(params, q, k, v);
    const ErrorStats e = compare_to_reference(out, ref);
    // K and V reach the reference already rounded to their storage, so what is left is the
    // kernel's own error, bounded by the output's storage: an fp16 K/V cache with fp32 Q and
    // O must stay within the fp32 bound (reading Q or writing O through fp16 would not).
    const double tol = tolerance(c.dtype);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, tol) << describe(e) << " plan: " << op.plan().describe();
    EXPECT_LT(e.rel_l2, tol) << describe(e);
    if (c.force_splits > 1) {
        EXPECT_GT(op.plan().n_splits, 1u);
    }
    if (c.kernel != AttentionKernel::Auto) {
        EXPECT_EQ(op.plan().kernel, c.kernel);
    }
    return op.plan();
}

// Head sizes off the tuned table: 4n + 2 (a padded last quad: 2, 6, 250), pairs that no row of
// 8 lanes splits evenly (40, 72, 120, 200, 250), multiples of 16 between the tuned ones (48,
// 112: MPT-30B, 160).
const std::uint32_t kOtherHeadDims[] = {2, 6, 40, 48, 72, 112, 120, 160, 200, 250};

// A deterministic walk over the grid: every length, head count, GQA ratio, batch,
// mode and dtype appears, without the full cross product (CI has 2 cores).
std::vector<Case> grid(bool quick) {
    const std::uint32_t lens[] = {1, 2, 7, 63, 64, 65, 127, 129, 257, 1000, 2048};
    const std::uint32_t heads[] = {1, 3, 8, 12, 16, 20, 32};
    const std::uint32_t dims[] = {32, 64, 80, 96, 128, 256};
    const std::uint32_t ratios[] = {1, 2, 4, 0};  // 0: MQA
    std::vector<Case> cases;
    std::uint32_t n = 0;
    for (std::uint32_t qi = 0; qi < std::size(lens); ++qi) {
        for (std::uint32_t ki = 0; ki < std::size(lens); ++ki) {
            const std::uint32_t q_len = lens[qi], kv_len = lens[ki];
            if ((qi + 2 * ki) % 3 != 0 && !(q_len == 1 || q_len == kv_len)) {
                continue;  // thin the cross product, keep decode and square shapes
            }
            const std::uint32_t step = n++;
            std::uint32_t n_head = heads[step % std::size(heads)];
            const std::uint32_t ratio = ratios[step % std::size(ratios)];
            std::uint32_t n_kv_head = ratio == 0 ? 1 : n_head / ratio;
            if (n_kv_head == 0 || n_head % n_kv_head != 0)
                n_kv_head = n_head;
            const std::uint32_t head_dim = dims[(step / 2) % std::size(dims)];
            std::uint32_t batch = 1 + step % 3;
            // Keep each case's work bounded for CI.
            const std::uint64_t work = std::uint64_t{q_len} * kv_len * n_head * batch * head_dim;
            const std::uint64_t budget = quick ? (1ull << 26) : (1ull << 29);
            while (work / (batch > 1 ? 1 : 1) > budget && n_head > 1) {
                n_head = n_head / 2 ? n_head / 2 : 1;
                n_kv_head = std::min(n_kv_head, n_head);
                while (n_head % n_kv_head != 0)
                    --n_kv_head;
                if (std::uint64_t{q_len} * kv_len * n_head * batch * head_dim <= budget)
                    break;
            }
            while (std::uint64_t{q_len} * kv_len * n_head * batch * head_dim > budget && batch > 1)
                --batch;
            // Lavapipe on 2 cores runs ~0.1-1 GFLOP/s: the largest shapes keep a small head
            // (every head size has its own test below).
            std::uint32_t dim = head_dim;
            while (std::uint64_t{q_len} * kv_len * n_head * batch * dim > budget && dim > 32)
                dim = dim > 64 ? 64 : 32;
            cases.push_back(Case{
                .batch = batch,
                .q_len = q_len,
                .kv_len = kv_len,
                .n_head = n_head,
                .n_kv_head = n_kv_head,
                .head_dim = dim,
                .mask = step % 4 == 3 ? MaskMode::None : MaskMode::Causal,
                .alibi = step % 5 == 4 ? AlibiMode::Off : (step % 5 == 2 ? AlibiMode::Symmetric : AlibiMode::Causal),
                .dtype = step % 2 == 0 ? DType::F32 : DType::F16,
                .slope_table = step % 7 == 3,
                .kv_lens = step % 6 == 5,
                .max_bias = step % 9 == 8 ? 16.0f : 8.0f});
        }
    }
    return cases;
}

bool quick_mode() {
    const char* q = std::getenv("VKF_TEST_QUICK");
    return q != nullptr && std::strcmp(q, "1") == 0;
}

class Attention_ : public VulkanTest {};

TEST_F(Attention_, MatchesTheReferenceOverTheShapeGrid) {
    std::uint64_t seed = 1000;
    const auto cases = grid(quick_mode());
    for (const Case& c : cases) {
        run_case(ctx(), c, seed += 10);
        if (HasFatalFailure())
            return;
    }
    std::printf("%zu grid cases\n", cases.size());
}

// The grid's shapes again, with fp32 Q/O over an fp16 K/V cache (a model session's storage).
TEST_F(Attention_, Fp16KvMatchesTheReferenceOverTheShapeGrid) {
    std::uint64_t seed = 1500;
    const auto cases = grid(quick_mode());
    for (const Case& c : cases) {
        run_case(ctx(), with_f16_kv(c), seed += 10);
        if (HasFatalFailure())
            return;
    }
    std::printf("%zu grid cases with an fp16 K/V cache\n", cases.size());
}

TEST_F(Attention_, EveryHeadDimStorageAndMode) {
    std::uint64_t seed = 2000;
    for (std::uint32_t d : kTunedHeadDims) {
        for (const Storage& st : kStorages) {
            const DType t = st.dtype;
            run_case(ctx(), in(st, Case{2, 33, 70, 6, 3, d, MaskMode::Causal, AlibiMode::Causal, t}), seed++);
            run_case(ctx(), in(st, Case{1, 70, 33, 4, 1, d, MaskMode::None, AlibiMode::Symmetric, t}), seed++);
            run_case(ctx(), in(st, Case{3, 5, 129, 3, 3, d, MaskMode::Causal, AlibiMode::Off, t, true, true}), seed++);
        }
    }
}

// Every kernel (tiled, rows, and split-KV decoding through each) at every head size above, each
// kernel in a different storage per size so that every size meets all three storages.
TEST_F(Attention_, EveryEvenHeadSizeMatches) {
    std::uint64_t seed = 8000;
    for (std::size_t i = 0; i < std::size(kOtherHeadDims); ++i) {
        const std::uint32_t d = kOtherHeadDims[i];
        const Storage& s0 = kStorages[i % 3];
        const Storage& s1 = kStorages[(i + 1) % 3];
        const Storage& s2 = kStorages[(i + 2) % 3];
        Case tiled = in(s0, {2, 37, 70, 6, 3, d, MaskMode::Causal, AlibiMode::Causal, s0.dtype});
        tiled.kernel = AttentionKernel::Tiled;
        run_case(ctx(), tiled, seed++);
        Case rows = in(s1, {1, 29, 53, 4, 1, d, MaskMode::None, AlibiMode::Symmetric, s1.dtype, i % 2 == 0});
        rows.kernel = AttentionKernel::Rows;
        run_case(ctx(), rows, seed++);
        Case decode = in(s2, {2, 1, 301, 3, 1, d, MaskMode::Causal, AlibiMode::Causal, s2.dtype, false, true, 3});
        decode.kernel = i % 2 == 0 ? AttentionKernel::Rows : AttentionKernel::Tiled;
        run_case(ctx(), decode, seed++);
        if (HasFatalFailure())
            return;
    }
}

TEST_F(Attention_, SplitKvDecodeMatches) {
    std::uint64_t seed = 3000;
    // Chosen automatically for a single decoded row over a long cache.
    const auto plan =
        run_case(ctx(), Case{1, 1, 4096, 8, 2, 64, MaskMode::Causal, AlibiMode::Causal, DType::F32}, seed++);
    EXPECT_GT(plan.n_splits, 1u) << "decode at kv_len 4096 should use split-KV";
    for (const Storage& st : kStorages) {
        const DType t = st.dtype;
        run_case(ctx(), in(st, Case{2, 3, 1000, 12, 4, 128, MaskMode::Causal, AlibiMode::Causal, t, false, true, 5}),
                 seed++);
        run_case(ctx(), in(st, Case{1, 7, 257, 20, 20, 80, MaskMode::None, AlibiMode::Symmetric, t, true, false, 3}),
                 seed++);
        run_case(ctx(), in(st, Case{3, 1, 65, 3, 1, 256, MaskMode::Causal, AlibiMode::Causal, t, false, true, 4}),
                 seed++);
    }
    // A session's decoding step over its fp16 cache: split automatically, as at kv_len 4096 above.
    const auto kv_plan = run_case(
        ctx(), with_f16_kv(Case{1, 1, 4096, 8, 2, 64, MaskMode::Causal, AlibiMode::Causal, DType::F32}), seed++);
    EXPECT_GT(kv_plan.n_splits, 1u);
}

TEST_F(Attention_, LongKvStaysRightOnDriversWithALoopLimit) {
    // llvmpipe skips loop iterations past 65535 per invocation (runtime/quirks.cpp); the plan
    // splits the KV so that no invocation gets near the limit.
    Case tiled{1, 16, 6000, 2, 2, 128, MaskMode::None, AlibiMode::Symmetric, DType::F32};
    tiled.kernel = AttentionKernel::Tiled;
    const auto plan = run_case(ctx(), tiled, 5000);
    if (ctx().limits().max_loop_iterations != 0) {
        EXPECT_GT(plan.n_splits, 1u);
    }
    run_case(ctx(), Case{1, 300, 2500, 1, 1, 256, MaskMode::Causal, AlibiMode::Causal, DType::F16}, 5001);
    // The rows kernel runs one loop iteration per block of keys (its other loops unroll):
    // 70000 keys stay in one split, and would come out wrong if the driver counted more.
    Case rows{1, 3, 70000, 1, 1, 32, MaskMode::Causal, AlibiMode::Causal, DType::F32};
    rows.kernel = AttentionKernel::Rows;
    rows.force_splits = 1;
    const auto rows_plan = run_case(ctx(), rows, 5002);
    if (ctx().limits().loop_unrolling) {
        EXPECT_EQ(rows_plan.n_splits, 1u) << rows_plan.describe();
    }  // else every nested loop counts too, and the plan splits (rows_loop_count)
    if (ctx().limits().max_loop_iterations != 0) {
        EXPECT_LE(rows_plan.loop_iterations, ctx().limits().max_loop_iterations / 2);
        // Past the budget the rows kernel splits as well.
        const auto long_plan = plan_attention(AttentionDevice{.limits = ctx().limits(), .cpu = true},
                                              AttentionShape{1, 1, 300000, 1, 1, 64});
        EXPECT_GT(long_plan.n_splits, 1u);
        EXPECT_LE(long_plan.loop_iterations, ctx().limits().max_loop_iterations / 2);
    }
}

// A representative subset of the grid: odd and prime lengths, q_len != kv_len, MHA/GQA/MQA,
// every head size, every storage, every mask and ALiBi mode, slope tables, kv_lens, split
// and unsplit, decoding.
std::vector<Case> kernel_subset() {
    using M = MaskMode;
    using A = AlibiMode;
    const DType f32 = DType::F32, f16 = DType::F16;
    std::vector<Case> cases = {
        {1, 1, 1, 1, 1, 32, M::Causal, A::Causal, f32},
        {2, 7, 7, 3, 3, 64, M::Causal, A::Causal, f16},
        {1, 63, 63, 8, 2, 80, M::None, A::Symmetric, f32},
        {3, 65, 129, 12, 1, 96, M::Causal, A::Causal, f16, false, true},
        {1, 129, 127, 4, 4, 128, M::None, A::Off, f32, true},
        {2, 257, 257, 2, 1, 256, M::Causal, A::Causal, f16},
        {1, 1000, 1000, 2, 2, 64, M::Causal, A::Causal, f32},
        {1, 131, 1000, 3, 1, 32, M::Causal, A::Symmetric, f16, true, false, 0, 16.0f},
        {1, 5, 1000, 6, 3, 128, M::Causal, A::Causal, f16, false, true, 7},
        {2, 61, 509, 4, 2, 80, M::None, A::Symmetric, f32, false, false, 3},
        {2, 1, 4096, 4, 1, 64, M::Causal, A::Causal, f32, false, true},
        {1, 1, 2053, 16, 16, 128, M::Causal, A::Causal, f16},
        {3, 1, 65, 3, 1, 256, M::Causal, A::Off, f32, false, true, 4},
        {1, 2, 997, 5, 5, 96, M::None, A::Symmetric, f16, true, false, 2},
    };
    // fp32 Q/O with an fp16 K/V cache.
    for (const Case& c : std::initializer_list<Case>{
             {1, 1, 1, 1, 1, 32, M::Causal, A::Causal, f32},
             {3, 65, 129, 12, 1, 96, M::Causal, A::Causal, f32, false, true},
             {2, 257, 257, 2, 1, 256, M::Causal, A::Causal, f32},
             {1, 131, 1000, 3, 1, 32, M::Causal, A::Symmetric, f32, true, false, 0, 16.0f},
             {1, 5, 1000, 6, 3, 128, M::Causal, A::Causal, f32, false, true, 7},
             {2, 61, 509, 4, 2, 80, M::None, A::Symmetric, f32, false, false, 3},
             {2, 1, 4096, 4, 1, 64, M::Causal, A::Causal, f32, false, true},
             {1, 2, 997, 5, 5, 96, M::None, A::Symmetric, f32, true, false, 2},
         }) {
        cases.push_back(with_f16_kv(c));
    }
    for (std::uint32_t d : kTunedHeadDims) {
        for (const Storage& st : kStorages) {
            cases.push_back(in(st, {2, 33, 70, 6, 3, d, M::Causal, A::Causal, st.dtype}));
        }
    }
    return cases;
}

TEST_F(Attention_, RowsKernelMatchesOverASubsetOfTheGrid) {
    std::uint64_t seed = 6000;
    for (Case c : kernel_subset()) {
        c.kernel = AttentionKernel::Rows;
        const auto plan = run_case(ctx(), c, seed += 10);
        EXPECT_EQ(plan.shared_bytes, 0u);
        if (HasFatalFailure())
            return;
    }
}

TEST_F(Attention_, TiledKernelMatchesOverASubsetOfTheGrid) {
    std::uint64_t seed = 7000;
    for (Case c : kernel_subset()) {
        c.kernel = AttentionKernel::Tiled;
        run_case(ctx(), c, seed += 10);
        if (HasFatalFailure())
            return;
    }
}

TEST(AttentionForcedLimits, PhoneAndTinyLimitsPickSmallerTilesAndStayRight) {
    // no_subgroup_ops: the rows kernel's direct-load variant (no shuffles) on CPU devices.
    const char* specs[] = {"phone", "shared_memory=8192,workgroup_invocations=64", "no_subgroup_ops",
                           "shared_memory=6144,workgroup_invocations=32,workgroup_count=3"};
    std::uint64_t seed = 4000;
    for (const char* spec : specs) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        std::vector<std::uint32_t> rows;
        for (std::uint32_t d : {32u, 64u, 128u}) {
            for (const Storage& st : kStorages) {
                const DType t = st.dtype;
                for (AttentionKernel kernel : {AttentionKernel::Tiled, AttentionKernel::Rows}) {
                    Case c = in(st, {2, 65, 127, 6, 2, d, MaskMode::Causal, AlibiMode::Causal, t});
                    c.kernel = kernel;
                    const auto plan = run_case(ctx, c, seed++);
                    EXPECT_LE(plan.shared_bytes, ctx.limits().shared_memory);
                    EXPECT_LE(plan.workgroup_size, ctx.limits().workgroup_invocations);
                    if (!ctx.limits().subgroup_ops) {
                        EXPECT_EQ(plan.subgroup_loads, 0u);
                    }
                }
                run_case(ctx, in(st, {1, 1, 700, 4, 4, d, MaskMode::Causal, AlibiMode::Symmetric, t, false, false, 3}),
                         seed++);
            }
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

// Both kernels, split-KV decoding and the combine pass with their loops not unrolled (the
// SPIR-V the llvmpipe 25 quirk makes), at a tuned size, an untuned one and a 4n + 2 one.
TEST(AttentionForcedLimits, KernelsStayRightWithoutLoopUnrolling) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_unroll")));
    EXPECT_FALSE(ctx.limits().loop_unrolling);
    std::uint64_t seed = 4500;
    for (std::uint32_t d : {64u, 72u, 18u}) {
        for (const Storage& st : kStorages) {
            const DType t = st.dtype;
            for (AttentionKernel kernel : {AttentionKernel::Tiled, AttentionKernel::Rows}) {
                Case c = in(st, {2, 33, 70, 6, 3, d, MaskMode::Causal, AlibiMode::Causal, t});
                c.kernel = kernel;
                run_case(ctx, c, seed++);
            }
            run_case(ctx, in(st, {1, 1, 300, 4, 2, d, MaskMode::Causal, AlibiMode::Symmetric, t, false, true, 3}),
                     seed++);
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

// The other head sizes under limits below the tuned tiles': the tiled kernel's smallest tiles
// (a 250-wide K/V tile row in 6 KiB of shared memory) and the rows kernel's direct loads.
TEST(AttentionForcedLimits, OtherHeadSizesFitSmallLimitsAndStayRight) {
    const char* specs[] = {"shared_memory=6144,workgroup_invocations=32,workgroup_count=3", "no_subgroup_ops"};
    std::uint64_t seed = 8500;
    for (const char* spec : specs) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        // The rows kernel's direct loads take llvmpipe a minute to compile at 250 (Mesa 22.3):
        // smaller sizes there, 4n + 2 and uneven ones.
        const bool tiled = spec[0] == 's';
        const std::uint32_t dims[] = {tiled ? 250u : 6u, tiled ? 6u : 18u, tiled ? 112u : 40u};
        for (std::size_t i = 0; i < std::size(dims); ++i) {
            const Storage& st = kStorages[i % 3];
            Case c = in(st, {2, 19, 41, 4, 2, dims[i], MaskMode::Causal, AlibiMode::Causal, st.dtype});
            c.kernel = tiled ? AttentionKernel::Tiled : AttentionKernel::Rows;
            const auto plan = run_case(ctx, c, seed++);
            EXPECT_LE(plan.shared_bytes, ctx.limits().shared_memory);
            EXPECT_LE(plan.workgroup_size, ctx.limits().workgroup_invocations);
            EXPECT_EQ(plan.subgroup_loads, 0u) << plan.describe();
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

// Every even head size gets a tiled plan within the limits, from a desktop GPU's down to 6 KiB
// of shared memory; the tuned sizes keep the tuned tiles: pairs split evenly over a row's
// lanes, K/V rows padded by one vec4 (the shared bytes below).
TEST(AttentionPlans, EveryEvenHeadSizeHasATiledPlan) {
    ComputeLimits big{.shared_memory = 49152,
                      .workgroup_invocations = 1024,
                      .workgroup_size = {1024, 1024, 64},
                      .workgroup_count = {65535, 65535, 65535},
                      .storage_buffer_range = 1ull << 32,
                      .storage_buffers = 8};
    ComputeLimits phone = big;
    phone.shared_memory = 16384;
    phone.workgroup_invocations = 128;
    phone.workgroup_size = {128, 128, 64};
    ComputeLimits tiny = big;
    tiny.shared_memory = 6144;
    tiny.workgroup_invocations = 32;
    tiny.workgroup_size = {32, 32, 32};
    for (const ComputeLimits& limits : {big, phone, tiny}) {
        for (std::uint32_t d = 2; d <= kMaxHeadDim; d += 2) {
            for (const AttentionShape& shape :
                 {AttentionShape{1, 512, 512, 8, 8, d}, AttentionShape{1, 1, 4096, 8, 8, d}}) {
                SCOPED_TRACE("shared " + std::to_string(limits.shared_memory) + " d " + std::to_string(d) + " q_len " +
                             std::to_string(shape.q_len));
                AttentionPlan plan;
                ASSERT_NO_THROW(plan = plan_attention(limits, shape));
                EXPECT_LE(plan.shared_bytes, limits.shared_memory);
                EXPECT_LE(plan.workgroup_size, limits.workgroup_invocations);
                if (d % 16 == 0) {
                    const std::uint32_t t = plan.threads_per_row, r = plan.rows_per_group, k = plan.keys_per_tile;
                    EXPECT_EQ((d / 2) % t, 0u) << plan.describe();
                    const std::uint32_t p_stride = k + t * (1 - (k / t) % 2);
                    EXPECT_EQ(plan.shared_bytes, 4 * (r * d + k * (d + 4) + r * p_stride + r * t)) << plan.describe();
                }
            }
        }
    }
    // MPT-30B's prefill takes the largest tile on a desktop GPU.
    const auto mpt30b = plan_attention(big, AttentionShape{1, 2048, 2048, 56, 56, 112});
    EXPECT_EQ(mpt30b.rows_per_group, 32u) << mpt30b.describe();
}

TEST(AttentionPlans, TilesFollowTheLimits) {
    ComputeLimits big{.shared_memory = 49152,
                      .workgroup_invocations = 1024,
                      .workgroup_size = {1024, 1024, 64},
                      .workgroup_count = {65535, 65535, 65535},
                      .storage_buffer_range = 1ull << 32,
                      .storage_buffers = 8};
    ComputeLimits small = big;
    small.shared_memory = 8192;
    small.workgroup_invocations = 64;
    small.workgroup_size = {64, 64, 64};
    const AttentionShape prefill{1, 2048, 2048, 16, 16, 128};
    const auto p_big = plan_attention(big, prefill);
    const auto p_small = plan_attention(small, prefill);
    EXPECT_GT(p_big.rows_per_group * p_big.keys_per_tile, p_small.rows_per_group * p_small.keys_per_tile);
    EXPECT_LE(p_small.shared_bytes, 8192u);
    EXPECT_EQ(p_big.n_splits, 1u);
    const auto decode = plan_attention(big, AttentionShape{1, 1, 4096, 16, 16, 128});
    EXPECT_GT(decode.n_splits, 1u);
    ComputeLimits hopeless = small;
    hopeless.shared_memory = 1024;
    EXPECT_THROW((void)plan_attention(hopeless, prefill), Error);
    // CPU devices get the rows kernel unless the tiled one is forced; it needs no shared memory.
    EXPECT_EQ(p_big.kernel, AttentionKernel::Tiled);
    const AttentionDevice cpu{.limits = hopeless, .cpu = true};
    const auto p_cpu = plan_attention(cpu, prefill);
    EXPECT_EQ(p_cpu.kernel, AttentionKernel::Rows);
    EXPECT_EQ(p_cpu.shared_bytes, 0u);
    EXPECT_LE(p_cpu.workgroup_size, hopeless.workgroup_invocations);
    EXPECT_EQ(plan_attention(AttentionDevice{.limits = big, .cpu = true}, prefill,
                             AttentionOptions{.kernel = AttentionKernel::Tiled})
                  .kernel,
              AttentionKernel::Tiled);
    EXPECT_EQ(plan_attention(big, prefill, AttentionOptions{.kernel = AttentionKernel::Rows}).kernel,
              AttentionKernel::Rows);
}

TEST(AttentionPlans, SubgroupLoadsOnlyWhereFullSubgroupsCanBeRequired) {
    ComputeLimits cpu_limits{.shared_memory = 32768,
                             .workgroup_invocations = 1024,
                             .workgroup_size = {1024, 1024, 64},
                             .workgroup_count = {65535, 65535, 65535},
                             .storage_buffer_range = 1ull << 27,
                             .storage_buffers = 8,
                             .subgroup_size = 8,
                             .subgroup_ops = true,
                             .subgroup_size_control = true};
    const AttentionShape prefill{1, 512, 512, 16, 16, 64};
    const auto with = plan_attention(AttentionDevice{.limits = cpu_limits, .cpu = true}, prefill);
    EXPECT_EQ(with.kernel, AttentionKernel::Rows);
    EXPECT_EQ(with.subgroup_loads, 8u) << with.describe();
    EXPECT_EQ(with.workgroup_size % 8, 0u) << with.describe();
    // The shuffles assume full subgroups of 8: without a way to require them, direct loads.
    cpu_limits.subgroup_size_control = false;
    const auto without = plan_attention(AttentionDevice{.limits = cpu_limits, .cpu = true}, prefill);
    EXPECT_EQ(without.subgroup_loads, 0u) << without.describe();
    EXPECT_NE(without.describe().find("direct K/V loads"), std::string::npos) << without.describe();
}

TEST(AttentionPlans, SplitKvTargetsFollowTheComputeUnits) {
    ComputeLimits gpu{.shared_memory = 49152,
                      .workgroup_invocations = 1024,
                      .workgroup_size = {1024, 1024, 64},
                      .workgroup_count = {65535, 65535, 65535},
                      .storage_buffer_range = 1ull << 32,
                      .storage_buffers = 8};
    // Decoding 16 heads gives 16 workgroups; the KV is split until there are 4 per compute
    // unit (256 where the device does not say), in slices of at least 256 keys.
    const AttentionShape decode{1, 1, 32768, 16, 16, 128};
    auto splits = [&](std::uint32_t compute_units) {
        gpu.compute_units = compute_units;
        const AttentionPlan plan = plan_attention(gpu, decode);
        EXPECT_EQ(plan.kernel, AttentionKernel::Tiled);
        return plan.n_splits;
    };
    EXPECT_EQ(splits(0), 16u);    // unknown: 256 workgroups
    EXPECT_EQ(splits(128), 32u);  // an H100-class GPU: 512 workgroups
    EXPECT_EQ(splits(16), 4u);    // a small GPU: 64 workgroups
    EXPECT_EQ(splits(2), 1u);     // 8 workgroups: the heads alone are more
    // CPU devices' rows kernel keeps its own target, whatever the compute units.
    gpu.compute_units = 0;
    const auto cpu_default = plan_attention(AttentionDevice{.limits = gpu, .cpu = true}, decode);
    gpu.compute_units = 128;
    EXPECT_EQ(plan_attention(AttentionDevice{.limits = gpu, .cpu = true}, decode).n_splits, cpu_default.n_splits);
}

TEST(AttentionForcedLimits, ForcedComputeUnitsChangeTheSplitsAndStayRight) {
    // The tiled kernel decoding 8 heads (8 workgroups) over 4096 keys on devices of 1 and 4
    // compute units (targets of 4 and 16 workgroups: 1 and 2 splits) and of unknown size
    // (256: 16 splits), each against the reference.
    const Case decode{1,
                      1,
                      4096,
                      8,
                      2,
                      64,
                      MaskMode::Causal,
                      AlibiMode::Causal,
                      DType::F32,
                      false,
                      false,
                      0,
                      8.0f,
                      AttentionKernel::Tiled};
    std::uint64_t seed = 4500;
    std::optional<std::uint32_t> rows_splits;
    for (const auto& [spec, expected] : {std::pair{"compute_units=1", 1u}, std::pair{"compute_units=4", 2u}}) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        if (ctx.device_info().compute_units != 0 && ctx.device_info().compute_units < 4) {
            GTEST_SKIP() << "the device reports " << ctx.device_info().compute_units
                         << " compute units; an override only lowers it";
        }
        EXPECT_TRUE(ctx.limits().forced);
        // Under small shared memory (VKF_LIMITS=spec_minimum: 16 KiB) the tiles are shorter and
        // the driver's loop limit may need more splits than the compute units ask for.
        const AttentionShape shape{decode.batch,  decode.q_len,     decode.kv_len,
                                   decode.n_head, decode.n_kv_head, decode.head_dim};
        const std::uint32_t loop_splits =
            plan_attention(attention_device(ctx), shape, {.force_splits = 1, .kernel = AttentionKernel::Tiled})
                .n_splits;
        for (const Storage& st : kStorages) {
            const auto plan = run_case(ctx, in(st, decode), seed++);
            EXPECT_EQ(plan.n_splits, std::max(expected, loop_splits)) << plan.describe();
        }
        // The rows kernel (CPU devices) keeps its own target.
        Case rows = decode;
        rows.kernel = AttentionKernel::Rows;
        const auto rows_plan = run_case(ctx, rows, seed++);
        if (rows_splits) {
            EXPECT_EQ(rows_plan.n_splits, *rows_splits);
        }
        rows_splits = rows_plan.n_splits;
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    MessageSink sink;
    Context ctx(test_options(sink));
    if (ctx.limits().compute_units == 0) {
        EXPECT_EQ(run_case(ctx, decode, seed++).n_splits, 16u);
    }
}

TEST(AttentionForcedLimits, RowsKernelPrefillWithoutSubgroupSizeControlTakesDirectLoads) {
    // no_subgroup_size_control: no pipeline may require full subgroups, so the rows kernel
    // reads K and V directly instead of sharing them by subgroup shuffles.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_size_control")));
    EXPECT_FALSE(ctx.limits().subgroup_size_control);
    std::uint64_t seed = 4600;
    for (const Storage& st : kStorages) {
        for (std::uint32_t d : {32u, 128u}) {
            Case c = in(st, {2, 129, 129, 4, 2, d, MaskMode::Causal, AlibiMode::Causal, st.dtype});
            c.kernel = AttentionKernel::Rows;
            const auto plan = run_case(ctx, c, seed++);
            EXPECT_EQ(plan.subgroup_loads, 0u) << plan.describe();
            EXPECT_NE(plan.describe().find("direct K/V loads"), std::string::npos) << plan.describe();
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST_F(Attention_, RowsKernelSharesLoadsOverFullSubgroups) {
    if (!ctx().limits().subgroup_ops) {
        GTEST_SKIP() << "no subgroup shuffles in compute shaders";
    }
    if (!ctx().limits().subgroup_size_control) {
        GTEST_SKIP() << "the device cannot require full subgroups of a known size (subgroupSizeControl, "
                        "computeFullSubgroups): the rows kernel never shares loads by shuffles on it";
    }
    std::uint64_t seed = 4700;
    for (const Storage& st : kStorages) {
        Case c = in(st, {1, 200, 331, 3, 1, 96, MaskMode::Causal, AlibiMode::Causal, st.dtype});
        c.kernel = AttentionKernel::Rows;
        const auto plan = run_case(ctx(), c, seed++);
        EXPECT_EQ(plan.subgroup_loads, ctx().limits().subgroup_size) << plan.describe();
        EXPECT_EQ(plan.workgroup_size % plan.subgroup_loads, 0u) << plan.describe();
    }
}

TEST_F(Attention_, BadInputsAreRefusedWithClearErrors) {
    auto expect_error = [](auto&& fn, const std::string& needle) {
        try {
            fn();
            ADD_FAILURE() << "no error; expected '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    const AttentionShape ok{1, 8, 8, 4, 2, 64};
    // Odd sizes have no fp16 pairs; past 256 the rows kernel's registers and the tiles run out.
    for (std::uint32_t d : {63u, 113u, 1u, 258u, 512u}) {
        expect_error(
            [&] {
                Attention(ctx(), AttentionParams{.shape = {1, 8, 8, 4, 2, d}}, DType::F32);
            },
            "head_dim " + std::to_string(d) +
                " is not supported by the GPU attention kernels; supported: even head sizes 2..256");
        expect_error([&] { check_head_dim(d); }, "even head sizes 2..256");
    }
    for (std::uint32_t d = 2; d <= kMaxHeadDim; d += 2) {
        EXPECT_NO_THROW(check_head_dim(d)) << d;
    }
    expect_error([&] { Attention(ctx(), AttentionParams{.shape = {1, 8, 8, 6, 4, 64}}, DType::F32); }, "n_kv_head");
    expect_error([&] { Attention(ctx(), AttentionParams{.shape = {1, 0, 8, 4, 2, 64}}, DType::F32); }, "q_len");
    const std::vector<float> three(3, 0.5f);
    expect_error([&] { Attention(ctx(), AttentionParams{.shape = ok, .slopes = three}, DType::F32); }, "slope");
    Attention op(ctx(), AttentionParams{.shape = ok}, DType::F32);
    Buffer small = ctx().create_buffer(100, MemoryKind::Device, "small");
    Buffer right = ctx().create_buffer(8 * 4 * 64 * 4, MemoryKind::Device, "right");
    Buffer kv = ctx().create_buffer(8 * 2 * 64 * 4, MemoryKind::Device, "kv");
    auto list = ctx().command_list();
    expect_error([&] { op.record(*list, whole(small), whole(kv), whole(kv), whole(right)); }, "Q range is 100 bytes");
    expect_error([&] { op.record(*list, whole(right), whole(right), whole(kv), whole(right)); }, "K range");
    // An fp16 K/V cache takes half the bytes of fp32 Q and O, and only that.
    const Attention kv16(ctx(), AttentionParams{.shape = ok}, DType::F32, AttentionOptions{.kv_dtype = DType::F16});
    Buffer kv_half = ctx().create_buffer(8 * 2 * 64 * 2, MemoryKind::Device, "kv f16");
    kv16.record(*list, whole(right), whole(kv_half), whole(kv_half), whole(right));
    expect_error([&] { kv16.record(*list, whole(right), whole(kv), whole(kv_half), whole(right)); },
                 "K range is 4096 bytes but the shape [1, 8, 2, 64] in f16 needs 2048 bytes");
    expect_error([&] { kv16.record(*list, whole(right), whole(kv_half), whole(kv_half), whole(kv_half)); },
                 "in f32 needs");
    // fp16 Q/O over an fp32 cache has no kernel variant, nor has any other element type.
    expect_error(
        [&] { Attention(ctx(), AttentionParams{.shape = ok}, DType::F16, AttentionOptions{.kv_dtype = DType::F32}); },
        "Q/O in f16 with K/V in f32 is not supported");
    expect_error([&] { Attention(ctx(), AttentionParams{.shape = ok}, DType::BF16); }, "not supported");
    // Tensors over maxStorageBufferRange are refused, naming the limit.
    MessageSink sink;
    Context tiny(test_options(sink, LimitOverrides::parse("storage_buffer_range=64K")));
    expect_error(
        [&] {
            Attention(tiny, AttentionParams{.shape = {1, 512, 512, 4, 4, 64}}, DType::F32);
        },
        "maxStorageBufferRange");
}

}  // namespace
}  // namespace vkf::test
