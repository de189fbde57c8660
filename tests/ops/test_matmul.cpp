// Matmul (Y = act(X W^T + bias) + residual) against the double-precision CPU reference:
// seeded random inputs over odd and prime shapes, decode (m = 1) and prefill shapes, fp32
// and fp16 weights, every kernel and epilogue, split-K, long K under llvmpipe's loop limit,
// tensors at unaligned offsets, weights bound in row ranges and forced smaller limits.
// Outputs are poisoned (NaN) before every run.

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"
#include "host/reference/ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cstdlib>
#include <memory>
#include <optional>

namespace vkf::test {
namespace {

struct Case {
    std::uint32_t m, n, k;
    DType dtype = DType::F32;
    bool bias = false;
    bool residual = false;
    Activation activation = Activation::None;
    MatmulOptions options{};
    std::uint32_t pad = 0;  // elements in front of every tensor in its buffer (odd: unaligned)
};

std::string name(const Case& c) {
    return "m" + std::to_string(c.m) + " n" + std::to_string(c.n) + " k" + std::to_string(c.k) + " " +
           to_string(c.dtype) + (c.bias ? " bias" : "") + (c.residual ? " residual" : "") + " " +
           to_string(c.activation) + " kernel=" + to_string(c.options.kernel) +
           (c.options.force_splits ? " splits" + std::to_string(c.options.force_splits) : "") +
           (c.pad ? " pad" + std::to_string(c.pad) : "");
}

// Runs one case on `ctx`, checks it against the reference and returns the plan used.
MatmulPlan run_case(Context& ctx, const Case& c, std::uint64_t seed) {
    SCOPED_TRACE(name(c));
    const auto x = random_uniform(std::size_t{c.m} * c.k, seed, -1.0f, 1.0f);
    const auto w = random_uniform(std::size_t{c.n} * c.k, seed + 1, -1.0f, 1.0f);
    const auto bias = c.bias ? random_uniform(c.n, seed + 2, -1.0f, 1.0f) : std::vector<float>{};
    const auto res = c.residual ? random_uniform(std::size_t{c.m} * c.n, seed + 3, -2.0f, 2.0f) : std::vector<float>{};
    const DeviceTensor xb = upload_tensor(ctx, x, DType::F32, "X", c.pad);
    const DeviceTensor wb = upload_tensor(ctx, w, c.dtype, "W", c.pad);
    const DeviceTensor yb = nan_tensor(ctx, std::uint64_t{c.m} * c.n, DType::F32, "Y", c.pad);
    std::optional<DeviceTensor> bb, rb;
    if (c.bias)
        bb = upload_tensor(ctx, bias, c.dtype, "bias", c.pad);
    if (c.residual)
        rb = upload_tensor(ctx, res, DType::F32, "residual", c.pad);

    MatmulOptions options = c.options;
    options.arithmetic = MatmulArithmetic::F32;  // these tolerances' (GPUs' default on f16 W is f16)
    const MatmulPlan plan = plan_matmul(matmul_device(ctx), c.m, c.n, c.k, c.dtype, options);
    Buffer scratch;
    if (plan.scratch_bytes > 0) {
        scratch = ctx.create_buffer(plan.scratch_bytes, MemoryKind::Device, "matmul scratch");
        poison(ctx, scratch);
    }
    auto list = ctx.command_list();
    record_matmul(ctx, *list,
                  MatmulArgs{.x = xb.range(),
                             .w = wb.range(),
                             .bias = bb ? bb->range() : BufferRange{},
                             .residual = rb ? rb->range() : BufferRange{},
                             .y = yb.range(),
                             .scratch = plan.scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                             .m = c.m,
                             .n = c.n,
                             .k = c.k,
                             .weight_dtype = c.dtype,
                             .activation = c.activation,
                             .options = options});
    ctx.submit(*list);
    std::vector<float> out(std::size_t{c.m} * c.n);
    ctx.download(yb.buffer(), std::span(out), yb.range().offset);

    // Against the weights the GPU read (fp32 tolerance), and for fp16 also against the
    // unrounded ones (fp16 tolerance).
    const auto ref =
        reference::matmul(x, rounded_to(c.dtype, w), rounded_to(c.dtype, bias), res, c.m, c.n, c.k, c.activation);
    const ErrorStats e = compare_to_reference(out, ref);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, 1e-5) << describe(e) << "; plan: " << plan.describe();
    EXPECT_LT(e.rel_l2, 1e-5) << describe(e);
    if (c.dtype == DType::F16) {
        const ErrorStats e16 =
            compare_to_reference(out, reference::matmul(x, w, bias, res, c.m, c.n, c.k, c.activation));
        EXPECT_LT(e16.max_rel, tolerance(DType::F16)) << describe(e16);
        EXPECT_LT(e16.rel_l2, tolerance(DType::F16)) << describe(e16);
    }
    if (ctx.limits().max_loop_iterations != 0) {
        EXPECT_LE(plan.loop_iterations, ctx.limits().max_loop_iterations / 2) << plan.describe();
    }
    return plan;
}

Activation activation_of(std::uint32_t i) {
    return i % 3 == 0 ? Activation::None : (i % 3 == 1 ? Activation::GeluTanh : Activation::GeluErf);
}

class Matmul_ : public VulkanTest {};

TEST_F(Matmul_, MatchesTheReferenceOverOddAndPrimeShapes) {
    const std::uint32_t ms[] = {1, 2, 3, 4, 5, 7, 16, 17, 33, 64, 65, 100};
    const std::uint32_t ns[] = {1, 3, 5, 31, 37, 64, 97, 128, 257};
    const std::uint32_t ks[] = {1, 2, 3, 7, 16, 31, 64, 65, 127, 256, 509, 1024};
    std::uint64_t seed = 100;
    std::uint32_t step = 0;
    for (std::uint32_t m : ms) {
        for (std::uint32_t i = 0; i < 5; ++i, ++step) {
            const std::uint32_t n = ns[(step * 5 + i) % std::size(ns)];
            const std::uint32_t k = ks[(step * 7 + 3 * i) % std::size(ks)];
            run_case(ctx(),
                     Case{.m = m,
                          .n = n,
                          .k = k,
                          .dtype = step % 2 == 0 ? DType::F32 : DType::F16,
                          .bias = step % 3 != 2,
                          .residual = step % 4 == 1,
                          .activation = activation_of(step / 2)},
                     seed += 10);
            if (HasFatalFailure())
                return;
        }
    }
}

// Whether the row-dot kernel (subgroup arithmetic) runs here: only where full subgroups of
// a known size can be required.
bool rowdot_runs(const Context& ctx) {
    return ctx.limits().subgroup_ops && ctx.limits().subgroup_size_control;
}

TEST_F(Matmul_, EveryKernelWithEveryEpilogueAndBothWeightTypes) {
    std::uint64_t seed = 1000;
    for (MatmulKernel kernel : {MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::Blocked, MatmulKernel::RowDot}) {
        if (kernel == MatmulKernel::RowDot && !rowdot_runs(ctx()))
            continue;  // RowDotOverOddAndPrimeShapes says why it skips
        for (DType t : {DType::F32, DType::F16}) {
            for (std::uint32_t a = 0; a < 3; ++a) {
                const MatmulPlan plan = run_case(ctx(),
                                                 Case{.m = 3 + 10 * a,
                                                      .n = 37,
                                                      .k = 129,
                                                      .dtype = t,
                                                      .bias = true,
                                                      .residual = a != 1,
                                                      .activation = activation_of(a),
                                                      .options = {.kernel = kernel}},
                                                 seed++);
                EXPECT_EQ(plan.kernel, kernel);
            }
            // Even k with an odd first element: fp16 W rows start mid-word.
            run_case(ctx(),
                     Case{.m = 2, .n = 11, .k = 64, .dtype = t, .bias = true, .options = {.kernel = kernel}, .pad = 3},
                     seed++);
        }
    }
}

// The kernel Auto picks: on CPU devices (lavapipe) row dots for one row (with subgroup
// arithmetic) and register blocks otherwise; on GPUs by shape.
MatmulKernel expected_kernel(Context& ctx, MatmulKernel on_gpu, std::uint32_t m) {
    if (!matmul_device(ctx).cpu)
        return on_gpu;
    return rowdot_runs(ctx) && m == 1 ? MatmulKernel::RowDot : MatmulKernel::Blocked;
}

TEST_F(Matmul_, DecodeShapes) {
    std::uint64_t seed = 2000;
    for (DType t : {DType::F32, DType::F16}) {
        // BLOOM-560m-like rows (hidden 1024, MLP 4096) at m = 1, and odd ones.
        auto plan =
            run_case(ctx(), Case{.m = 1, .n = 1024, .k = 1024, .dtype = t, .bias = true, .residual = true}, seed++);
        EXPECT_EQ(plan.kernel, expected_kernel(ctx(), MatmulKernel::Gemv, 1));
        plan = run_case(
            ctx(), Case{.m = 1, .n = 4096, .k = 1024, .dtype = t, .bias = true, .activation = Activation::GeluTanh},
            seed++);
        EXPECT_EQ(plan.kernel, expected_kernel(ctx(), MatmulKernel::Gemv, 1));
        run_case(ctx(), Case{.m = 1, .n = 1024, .k = 4096, .dtype = t, .bias = true, .residual = true}, seed++);
        run_case(ctx(), Case{.m = 1, .n = 13, .k = 333, .dtype = t, .activation = Activation::GeluErf}, seed++);
        // A small output over a long row splits K for parallelism.
        plan = run_case(ctx(), Case{.m = 1, .n = 8, .k = 4096, .dtype = t, .bias = true}, seed++);
        EXPECT_GT(plan.n_splits, 1u) << plan.describe();
    }
}

TEST_F(Matmul_, PrefillShapes) {
    std::uint64_t seed = 3000;
    for (DType t : {DType::F32, DType::F16}) {
        const auto plan = run_case(
            ctx(), Case{.m = 130, .n = 300, .k = 256, .dtype = t, .bias = true, .activation = Activation::GeluTanh},
            seed++);
        EXPECT_EQ(plan.kernel, expected_kernel(ctx(), MatmulKernel::Tiled, 130));
        if (plan.kernel == MatmulKernel::Tiled) {
            EXPECT_EQ(plan.tile_m, 64u);
        }
        run_case(ctx(), Case{.m = 9, .n = 65, .k = 96, .dtype = t, .residual = true}, seed++);
    }
}

TEST_F(Matmul_, SplitKAddsTheSlicesBeforeTheEpilogue) {
    std::uint64_t seed = 4000;
    for (MatmulKernel kernel : {MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::Blocked, MatmulKernel::RowDot}) {
        if (kernel == MatmulKernel::RowDot && !rowdot_runs(ctx()))
            continue;
        for (DType t : {DType::F32, DType::F16}) {
            const auto plan = run_case(ctx(),
                                       Case{.m = 5,
                                            .n = 19,
                                            .k = 301,
                                            .dtype = t,
                                            .bias = true,
                                            .residual = true,
                                            .activation = Activation::GeluErf,
                                            .options = {.kernel = kernel, .force_splits = 3},
                                            .pad = 1},
                                       seed++);
            EXPECT_GE(plan.n_splits, 3u);
            EXPECT_GT(plan.scratch_bytes, 0u);
        }
    }
    // Rows on 8 elements: the blocked kernel's 64-bit loads (with shaderInt64), slices of 68
    // starting on 4 elements but not 8, a partial block of rows.
    const MatmulOptions three_slices{.kernel = MatmulKernel::Blocked, .force_splits = 3};
    for (DType t : {DType::F32, DType::F16}) {
        const Case c{.m = 11, .n = 21, .k = 200, .dtype = t, .bias = true, .residual = true, .options = three_slices};
        const auto plan = run_case(ctx(), c, seed++);
        EXPECT_EQ(plan.k_split % 8, 4u) << plan.describe();
        EXPECT_EQ(plan.wide_loads, ctx().limits().int64) << plan.describe();
    }
}

TEST_F(Matmul_, LongKStaysRightOnDriversWithALoopLimit) {
    // llvmpipe skips loop iterations past 65535 per invocation (runtime/quirks.cpp). K = 16384
    // on every kernel; K = 70000 on the blocked kernel (a loop iteration per k, odd k) must
    // split. Without the split this case comes out wrong on lavapipe (max_rel 0.53).
    // force_splits = 1 turns off splitting for parallelism: only the loop limit splits here.
    std::uint64_t seed = 5000;
    const MatmulOptions no_parallel_split{.force_splits = 1};
    for (DType t : {DType::F32, DType::F16}) {
        run_case(ctx(), Case{.m = 1, .n = 64, .k = 16384, .dtype = t, .bias = true, .options = no_parallel_split},
                 seed++);
        run_case(ctx(), Case{.m = 20, .n = 37, .k = 16384, .dtype = t, .residual = true, .options = no_parallel_split},
                 seed++);
        run_case(ctx(),
                 Case{.m = 3,
                      .n = 9,
                      .k = 16384,
                      .dtype = t,
                      .options = {.kernel = MatmulKernel::Blocked, .force_splits = 1}},
                 seed++);
    }
    for (MatmulKernel kernel : {MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::RowDot}) {
        if (kernel == MatmulKernel::RowDot && !rowdot_runs(ctx()))
            continue;
        run_case(
            ctx(),
            Case{.m = 3, .n = 9, .k = 16384, .dtype = DType::F16, .options = {.kernel = kernel, .force_splits = 1}},
            seed++);
    }
    const auto plan = run_case(
        ctx(), Case{.m = 2, .n = 5, .k = 70001, .options = {.kernel = MatmulKernel::Blocked, .force_splits = 1}},
        seed++);
    if (ctx().limits().max_loop_iterations != 0) {
        EXPECT_GT(plan.n_splits, 1u) << plan.describe();
    }
}

TEST_F(Matmul_, ResidualMayBeTheOutput) {
    const std::uint32_t m = 7, n = 45, k = 80;
    const auto x = random_uniform(m * k, 6000), w = random_uniform(n * k, 6001), r = random_uniform(m * n, 6002);
    const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
    const DeviceTensor wb = upload_tensor(ctx(), w, DType::F16, "W");
    const DeviceTensor yb = upload_tensor(ctx(), r, DType::F32, "Y = residual");
    // Scratch where the plan takes it (the separate epilogue of devices with 4 storage buffers).
    const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), m, n, k, DType::F16);
    const Buffer scratch =
        scratch_bytes > 0 ? ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch") : Buffer{};
    auto list = ctx().command_list();
    record_matmul(ctx(), *list,
                  MatmulArgs{.x = xb.range(),
                             .w = wb.range(),
                             .residual = yb.range(),
                             .y = yb.range(),
                             .scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                             .m = m,
                             .n = n,
                             .k = k,
                             .weight_dtype = DType::F16,
                             .options = {.arithmetic = MatmulArithmetic::F32}});  // the 1e-5 below
    ctx().submit(*list);
    std::vector<float> out(m * n);
    ctx().download(yb.buffer(), std::span(out));
    const auto ref = reference::matmul(x, rounded_to(DType::F16, w), {}, r, m, n, k);
    const ErrorStats e = compare_to_reference(out, ref);
    EXPECT_LT(e.max_rel, 1e-5) << describe(e);
}

TEST_F(Matmul_, BadArgumentsAreRefusedNamingTheTensor) {
    auto expect_error = [](auto&& fn, const std::string& needle) {
        try {
            fn();
            ADD_FAILURE() << "no error; expected '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    Buffer x = ctx().create_buffer(4 * 8 * 16, MemoryKind::Device, "x");
    Buffer w = ctx().create_buffer(4 * 5 * 16, MemoryKind::Device, "w");
    Buffer y = ctx().create_buffer(4 * 8 * 5, MemoryKind::Device, "y");
    auto list = ctx().command_list();
    const MatmulArgs ok{.x = whole(x), .w = whole(w), .y = whole(y), .m = 8, .n = 5, .k = 16};
    MatmulArgs bad = ok;
    bad.k = 17;
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "X [8, 17] f32 needs a range of 544 bytes");
    bad = ok;
    bad.weight_dtype = DType::F16;
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W [5, 16] f16");
    bad = ok;
    bad.bias = whole(y);
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "bias [5] f32");
    bad = ok;
    bad.options = {.kernel = MatmulKernel::Blocked, .force_splits = 2};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "needs a scratch range");
    bad = ok;
    bad.m = 0;
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "empty shape");
}

// Runs a few cases of every kernel that fits on a context with forced limits.
void run_forced(const char* spec, std::uint64_t seed) {
    SCOPED_TRACE(spec);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse(spec)));
    const MatmulDevice device = matmul_device(ctx);
    for (MatmulKernel kernel :
         {MatmulKernel::Auto, MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::Blocked, MatmulKernel::RowDot}) {
        try {
            (void)plan_matmul(device, 29, 70, 93, DType::F32, {.kernel = kernel});
        } catch (const Error&) {
            continue;  // does not fit these limits; Auto never throws
        }
        for (DType t : {DType::F32, DType::F16}) {
            for (const Case& c : {Case{.m = 1, .n = 37, .k = 200, .bias = true},
                                  Case{.m = 29, .n = 70, .k = 93, .residual = true, .activation = Activation::GeluTanh},
                                  Case{.m = 67, .n = 5, .k = 1000, .bias = true, .activation = Activation::GeluErf}}) {
                Case with_type = c;
                with_type.dtype = t;
                with_type.options.kernel = kernel;
                const MatmulPlan plan = run_case(ctx, with_type, seed++);
                EXPECT_LE(plan.shared_bytes, ctx.limits().shared_memory) << plan.describe();
                EXPECT_LE(plan.workgroup_size, ctx.limits().workgroup_invocations) << plan.describe();
            }
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulForcedLimits, PhoneAndSmallDevicesPickSmallerTilesAndStayRight) {
    run_forced("phone", 7000);
    run_forced("shared_memory=8192,workgroup_invocations=64", 7100);
    run_forced("shared_memory=512,workgroup_invocations=16,workgroup_count=3", 7200);
}

// Every kernel with its loops not unrolled (the SPIR-V the llvmpipe 25 quirk makes; the Mesa 25
// CI leg runs every suite that way), right against the reference on any driver.
TEST(MatmulForcedLimits, EveryKernelStaysRightWithoutLoopUnrolling) {
    run_forced("no_unroll", 7300);
}

TEST(MatmulForcedLimits, NoSharedMemoryFallsBackToTheBlockedKernel) {
    MatmulDevice gpu{.limits = [] {
        MessageSink sink;
        return Context(test_options(sink, LimitOverrides::parse("shared_memory=8"))).limits();
    }()};
    EXPECT_EQ(plan_matmul(gpu, 1, 64, 64, DType::F32).kernel, MatmulKernel::Blocked);
    EXPECT_EQ(plan_matmul(gpu, 100, 64, 64, DType::F16).kernel, MatmulKernel::Blocked);
    EXPECT_THROW((void)plan_matmul(gpu, 100, 64, 64, DType::F16, {.kernel = MatmulKernel::Tiled}), Error);
    run_forced("shared_memory=8", 7300);
}

TEST(MatmulForcedLimits, WeightsLargerThanTheStorageRangeAreBoundInRowRanges) {
    // 64 KiB bindings: W [700, 96] (269 KB fp32, 134 KB fp16), Y and X in row pieces too,
    // like BLOOM's 250880 x 1024 lm_head against lavapipe's 128 MiB.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffer_range=64K")));
    std::uint64_t seed = 8000;
    for (DType t : {DType::F32, DType::F16}) {
        auto plan = run_case(ctx, Case{.m = 1, .n = 700, .k = 96, .dtype = t, .bias = true, .pad = 1}, seed++);
        EXPECT_LT(plan.cols_per_piece, 700u) << plan.describe();
        plan = run_case(ctx,
                        Case{.m = 200,
                             .n = 700,
                             .k = 96,
                             .dtype = t,
                             .bias = true,
                             .residual = true,
                             .activation = Activation::GeluTanh},
                        seed++);
        EXPECT_LT(plan.cols_per_piece, 700u) << plan.describe();
        EXPECT_LT(plan.rows_per_piece, 200u) << plan.describe();
        plan = run_case(ctx, Case{.m = 3, .n = 301, .k = 96, .dtype = t, .options = {.force_splits = 4}}, seed++);
        EXPECT_LE(plan.scratch_bytes, ctx.limits().storage_buffer_range);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

// The row-dot kernel (forced) over the odd and prime grid: one row as in decoding and more,
// aligned rows (16- and 32-byte loads) and unaligned ones (element by element), split K.
// Run on the device as it is, without 64-bit integers (16-byte loads only) and without
// subgroup arithmetic (Auto falls back to the blocked kernel; forcing RowDot is refused).
void run_rowdot_grid(Context& ctx, std::uint64_t seed) {
    const std::uint32_t ms[] = {1, 2, 3, 5, 8, 9};
    const std::uint32_t ns[] = {1, 7, 31, 37, 64, 97, 257};
    const std::uint32_t ks[] = {1, 8, 15, 16, 24, 64, 127, 256, 1000, 1024, 1032};
    std::uint32_t step = 0;
    for (std::uint32_t m : ms) {
        for (std::uint32_t i = 0; i < 6; ++i, ++step) {
            Case c{.m = m,
                   .n = ns[(step * 3 + i) % std::size(ns)],
                   .k = ks[(step * 5 + 2 * i) % std::size(ks)],
                   .dtype = step % 2 == 0 ? DType::F16 : DType::F32,
                   .bias = step % 3 != 2,
                   .residual = step % 4 == 1,
                   .activation = activation_of(step / 2),
                   .options = {.kernel = MatmulKernel::RowDot, .force_splits = step % 5 == 3 ? 3u : 0u},
                   .pad = step % 7 == 4 ? 8u : (step % 7 == 5 ? 1u : 0u)};
            const MatmulPlan plan = run_case(ctx, c, seed++);
            EXPECT_EQ(plan.kernel, MatmulKernel::RowDot);
            EXPECT_EQ(plan.wide_loads, ctx.limits().int64) << plan.describe();
        }
    }
}

TEST_F(Matmul_, RowDotOverOddAndPrimeShapes) {
    if (!ctx().limits().subgroup_ops)
        GTEST_SKIP() << "no subgroup arithmetic";
    if (!ctx().limits().subgroup_size_control)
        GTEST_SKIP() << "the device cannot require full subgroups of a known size (subgroupSizeControl, "
                        "computeFullSubgroups), so the row-dot kernel never runs on it";
    run_rowdot_grid(ctx(), 9000);
}

TEST(MatmulForcedLimits, RowDotWithoutInt64AndItsFallbackWithoutSubgroupOps) {
    {
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse("no_int64")));
        EXPECT_FALSE(ctx.limits().int64);
        if (rowdot_runs(ctx)) {
            run_rowdot_grid(ctx, 9500);
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_ops")));
    const MatmulDevice device = matmul_device(ctx);
    EXPECT_THROW((void)plan_matmul(device, 1, 64, 64, DType::F16, {.kernel = MatmulKernel::RowDot}), Error);
    const auto plan = run_case(ctx, Case{.m = 1, .n = 300, .k = 1024, .dtype = DType::F16, .bias = true}, 9900);
    EXPECT_NE(plan.kernel, MatmulKernel::RowDot);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulForcedLimits, WithoutSubgroupSizeControlDecodingTakesNoSubgroupKernel) {
    // no_subgroup_size_control: no pipeline may require a subgroup size, so the row-dot kernel
    // (which assumes full subgroups of the planned size) is never chosen, on CPU devices or GPUs.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_size_control")));
    EXPECT_FALSE(ctx.limits().subgroup_size_control);
    for (const bool cpu : {true, false}) {
        const MatmulDevice device{.limits = ctx.limits(), .cpu = cpu};
        const auto plan = plan_matmul(device, 1, 4096, 1024, DType::F16);
        EXPECT_NE(plan.kernel, MatmulKernel::RowDot) << plan.describe();
        EXPECT_EQ(plan.describe().find("subgroups"), std::string::npos) << plan.describe();
        try {
            (void)plan_matmul(device, 1, 64, 64, DType::F16, {.kernel = MatmulKernel::RowDot});
            ADD_FAILURE() << "a forced row-dot kernel was planned without subgroup size control";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("full subgroups of a required size"), std::string::npos) << e.what();
        }
    }
    // Decoding on the device as it is, against the reference.
    std::uint64_t seed = 9950;
    for (DType t : {DType::F32, DType::F16}) {
        const auto plan =
            run_case(ctx, Case{.m = 1, .n = 300, .k = 1024, .dtype = t, .bias = true, .residual = true}, seed++);
        EXPECT_NE(plan.kernel, MatmulKernel::RowDot) << plan.describe();
        run_case(ctx, Case{.m = 1, .n = 37, .k = 129, .dtype = t, .activation = Activation::GeluTanh, .pad = 1},
                 seed++);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
