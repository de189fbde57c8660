// The matmul's fp16 arithmetic (MatmulArithmetic::F16: the tiled and matrix-vector kernels on
// fp16 weights and the quantized row-dot and blocked kernels) against the double-precision CPU reference,
// within the fp16 bound of docs/DESIGN.md on every output (expect_within_f16_bound): the
// odd-shape grids the fp32 kernels pass, long rows (K up to 16384), split K, unaligned
// tensors and large activations (|x| up to 128 with K = 4096: no overflow). The same suite
// runs under VKF_LIMITS=no_fp16_arithmetic (test_matmul_f16_forced_off), where every plan must
// fall back to fp32 arithmetic and meet the fp32 tolerance. Outputs are poisoned (NaN)
// before every run.

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"
#include "host/reference/ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/ops/matmul_quant_cases.hpp"
#include "tests/support/vulkan_test.hpp"

#include <optional>

namespace vkf::test {
namespace {

class MatmulF16 : public VulkanTest {
protected:
    // What every plan asking for F16 must say: fp16 arithmetic exactly where the device
    // has it (not under VKF_LIMITS=no_fp16_arithmetic).
    void expect_arithmetic(const MatmulPlan& plan) {
        EXPECT_EQ(plan.f16_arithmetic, ctx().limits().fp16_arithmetic) << plan.describe();
    }
};

TEST_F(MatmulF16, TiledOverOddAndPrimeShapes) {
    const std::uint32_t ms[] = {1, 2, 3, 5, 17, 33, 65, 100};
    const std::uint32_t ns[] = {1, 3, 5, 31, 37, 64, 97, 257};
    const std::uint32_t ks[] = {1, 2, 3, 7, 16, 31, 65, 127, 509, 1024};
    std::uint64_t seed = 100;
    std::uint32_t step = 0;
    for (std::uint32_t m : ms) {
        for (std::uint32_t i = 0; i < 3; ++i, ++step) {
            const MatmulPlan plan = run_dense(ctx(),
                                              DenseCase{.m = m,
                                                        .n = ns[(step * 5 + i) % std::size(ns)],
                                                        .k = ks[(step * 7 + 3 * i) % std::size(ks)],
                                                        .bias = step % 3 != 2,
                                                        .residual = step % 4 == 1,
                                                        .activation = activation_of(step / 2),
                                                        .splits = step % 5 == 4 ? 3u : 0u,
                                                        .pad = step % 6 == 3 ? 3u : 0u},
                                              seed += 10);
            expect_arithmetic(plan);
            if (HasFatalFailure())
                return;
        }
    }
}

// The matrix-vector kernel (GPUs' decode, m <= 4) in fp16 arithmetic: odd n (the last
// workgroup's columns past n), k odd, even and a multiple of 8 (GEMV_F16's 16-byte loads where
// rows line up; k % 8 != 0 or the odd pad: the element path), split K, the epilogues.
TEST_F(MatmulF16, GemvOverOddShapes) {
    const std::uint32_t ns[] = {1, 3, 5, 31, 37, 97, 257};
    const std::uint32_t ks[] = {1, 2, 3, 7, 8, 16, 31, 64, 127, 504, 1032, 1024, 2047, 2048};
    std::uint64_t seed = 500;
    for (std::uint32_t step = 0; step < 14; ++step) {
        const MatmulPlan plan = run_dense(ctx(),
                                          DenseCase{.m = 1 + step % 4,
                                                    .n = ns[(step * 3) % std::size(ns)],
                                                    .k = ks[step],
                                                    .bias = step % 3 != 1,
                                                    .residual = step % 4 == 2,
                                                    .activation = activation_of(step / 2),
                                                    .splits = step % 5 == 3 ? 3u : 0u,
                                                    .pad = step % 6 == 5 ? 3u : 0u,
                                                    .kernel = MatmulKernel::Gemv},
                                          seed += 10);
        expect_arithmetic(plan);
        if (HasFatalFailure())
            return;
    }
}

// A GEMV workgroup of one invocation (shared memory for one: VKF_LIMITS shared_memory=16)
// walks all of K alone, and one slice (splits 1: none added for parallelism): the folds are
// what keeps its fp16 partials at 8 products. Without them the error of fp16 sums over K
// stays inside the worst-case bound but not fp16's tolerance over all outputs (checked by
// breaking the kernel). Both paths: the 16-byte loads, and elements (odd pad).
TEST(MatmulF16Gemv, OneInvocationKeepsItsFoldsOverLongRows) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("shared_memory=16")));
    std::uint64_t seed = 9600;
    for (const std::uint32_t pad : {0u, 3u}) {
        const MatmulPlan plan = run_dense(
            ctx,
            DenseCase{.m = 2, .n = 9, .k = 4096, .bias = true, .splits = 1, .pad = pad, .kernel = MatmulKernel::Gemv},
            seed++);
        EXPECT_EQ(plan.workgroup_size, 1u) << plan.describe();
        EXPECT_EQ(plan.n_splits, 1u) << plan.describe();
        EXPECT_EQ(plan.f16_arithmetic, ctx.limits().fp16_arithmetic) << plan.describe();
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

// Both formats and float kernels (the row-dot one where it runs), both bias types, the
// epilogues, split K, unaligned tensors and the SCALAR variant's unaligned rows of W: the
// quick set (each pipeline costs seconds of llvmpipe compiling, cold).
TEST_F(MatmulF16, QuantizedQuick) {
    const bool rowdot = rowdot_runs(ctx());
    const MatmulKernel decode = rowdot ? MatmulKernel::RowDot : MatmulKernel::Blocked;
    const MatmulArithmetic f16 = MatmulArithmetic::F16;
    const Case cases[] = {
        {.m = 1, .n = 37, .k = 96, .quant = QuantFormat::Q8_0, .bias = true, .options = {decode, 0, false, f16}},
        {.m = 13,
         .n = 67,
         .k = 1024,
         .quant = QuantFormat::Q4_0,
         .residual = true,
         .activation = Activation::GeluErf,
         .options = {MatmulKernel::Blocked, 2, false, f16}},
        {.m = 2,
         .n = 5,
         .k = 64,
         .quant = QuantFormat::Q8_0,
         .bias_dtype = DType::F16,
         .bias = true,
         .activation = Activation::GeluTanh,
         .options = {MatmulKernel::Blocked, 0, false, f16},
         .pad = 1,
         .w_pad = 1},
    };
    std::uint64_t seed = 200;
    for (const Case& c : cases) {
        expect_arithmetic(run_case(ctx(), c, seed += 10));
        if (HasFatalFailure())
            return;
    }
}

// The quantized suites' 28-case grid (full label: ~150 s of cold llvmpipe compiles).
TEST_F(MatmulF16, QuantizedOverOddAndPrimeShapesFull) {
    std::uint64_t seed = 300;
    std::uint32_t step = 0;
    for (Case c : odd_shape_grid()) {
        // Both float kernels, the row-dot one where it runs (see test_matmul_quant.cpp).
        c.options.kernel = step++ % 2 == 0 && rowdot_runs(ctx()) ? MatmulKernel::RowDot : MatmulKernel::Blocked;
        c.options.arithmetic = MatmulArithmetic::F16;
        c.w_pad = step % 7 == 5 ? 1u : 0u;  // the SCALAR variant's unaligned rows
        expect_arithmetic(run_case(ctx(), c, seed += 10));
        if (HasFatalFailure())
            return;
    }
}

// The quantized kernels of the long-row and large-activation cases: q8_0 blocked and q4_0
// row-dot (where it runs) in every run, which share their pipelines; all four in the full one.
bool quick_pair(QuantFormat f, MatmulKernel kernel) {
    return (f == QuantFormat::Q8_0) == (kernel == MatmulKernel::Blocked);
}

// Long rows: the fp32 folds keep the error of 8 products, whatever K. K = 16384 is in the
// full label (test_matmul_f16_full); 4096 in every run.
void long_rows(Context& ctx, std::uint32_t k, bool all) {
    std::uint64_t seed = 7000 + k;
    run_dense(ctx, DenseCase{.m = 3, .n = 5, .k = k, .bias = true, .residual = true}, seed++);
    run_dense(ctx, DenseCase{.m = 2, .n = 7, .k = k, .splits = 2}, seed++);
    // GEMV unsplit (one invocation's fp32 sum over k / 8 / 64 folds) and with an odd pad (the
    // element path).
    run_dense(ctx, DenseCase{.m = 1, .n = 9, .k = k, .bias = true, .kernel = MatmulKernel::Gemv}, seed++);
    run_dense(ctx, DenseCase{.m = 4, .n = 3, .k = k, .residual = true, .pad = 3, .kernel = MatmulKernel::Gemv}, seed++);
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (MatmulKernel kernel : {MatmulKernel::Blocked, MatmulKernel::RowDot}) {
            if ((kernel == MatmulKernel::RowDot && !rowdot_runs(ctx)) || !(all || quick_pair(f, kernel)))
                continue;
            run_case(ctx,
                     Case{.m = 1,
                          .n = 9,
                          .k = k,
                          .quant = f,
                          .bias = true,
                          .options = {.kernel = kernel, .arithmetic = MatmulArithmetic::F16}},
                     seed++);
        }
    }
}

TEST_F(MatmulF16, LongRows) {
    long_rows(ctx(), 4096, false);
}

TEST_F(MatmulF16, LongRowsFull) {
    long_rows(ctx(), 16384, true);
}

// |x| up to 128 with K = 4096: sums reach thousands, past what an fp16 accumulator over K
// could hold exactly and near what it could hold at all; 8-product folds stay under 1024.
TEST_F(MatmulF16, LargeActivationsDoNotOverflow) {
    std::uint64_t seed = 9000;
    run_dense(ctx(), DenseCase{.m = 3, .n = 5, .k = 4096, .bias = true, .x_range = 128.0f}, seed++);
    run_dense(ctx(),
              DenseCase{.m = 1, .n = 9, .k = 4096, .bias = true, .x_range = 128.0f, .kernel = MatmulKernel::Gemv},
              seed++);
    run_dense(ctx(),
              DenseCase{.m = 2, .n = 5, .k = 4095, .residual = true, .x_range = 128.0f, .kernel = MatmulKernel::Gemv},
              seed++);
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (MatmulKernel kernel : {MatmulKernel::Blocked, MatmulKernel::RowDot}) {
            if ((kernel == MatmulKernel::RowDot && !rowdot_runs(ctx())) || !quick_pair(f, kernel))
                continue;
            run_case(ctx(),
                     Case{.m = 1,
                          .n = 9,
                          .k = 4096,
                          .quant = f,
                          .residual = true,
                          .options = {.kernel = kernel, .arithmetic = MatmulArithmetic::F16},
                          .x_range = 128.0f},
                     seed++);
        }
    }
}

}  // namespace
}  // namespace vkf::test
