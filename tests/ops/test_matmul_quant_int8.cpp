// The quantized matmul's integer dot-product path (MatmulOptions::int8_activations: X
// quantized to int8 per block) against the CPU reference of exactly that computation
// (reference::matmul_int8_activations) at a tolerance scaled by each output's sum of block
// magnitudes; the fallback with no_integer_dot; and its error against the dequantized-weight
// reference (printed, loosely bounded). And the opt-in decode timings (VKF_QUANT_TIMINGS=1).

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"
#include "host/reference/ops.hpp"
#include "host/reference/quant_ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/ops/matmul_quant_cases.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>

namespace vkf::test {
namespace {

class MatmulQuant : public VulkanTest {};

// Decode timings on the device (printed, never asserted): m = 1 on BLOOM-560m's shapes,
// q8_0 and q4_0 against the dense fp16 kernel. Set VKF_QUANT_TIMINGS=1 to run. Each figure
// is the fastest of 7 submissions of `reps` matmuls, as wall time and as the process's CPU
// time (on lavapipe the device is this process's threads: CPU time is what the kernels
// cost even when other work shares the cores).
struct Timing {
    double wall_ms, cpu_ms;
};

double cpu_now_ms() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

Timing best_ms(Context& ctx, const MatmulArgs& args, int reps) {
    Timing best{1e30, 1e30};
    for (int r = 0; r < 7; ++r) {
        auto list = ctx.command_list();
        for (int i = 0; i < reps; ++i) {
            record_matmul(ctx, *list, args);
        }
        const double c0 = cpu_now_ms();
        const auto t0 = std::chrono::steady_clock::now();
        ctx.submit(*list);
        const auto t1 = std::chrono::steady_clock::now();
        const double c1 = cpu_now_ms();
        best.wall_ms = std::min(best.wall_ms, std::chrono::duration<double, std::milli>(t1 - t0).count() / reps);
        best.cpu_ms = std::min(best.cpu_ms, (c1 - c0) / reps);
    }
    return best;
}

TEST_F(MatmulQuant, DecodeTimings) {
    if (std::getenv("VKF_QUANT_TIMINGS") == nullptr)
        GTEST_SKIP() << "set VKF_QUANT_TIMINGS=1 to time decoding";
    struct Shape {
        std::uint32_t n, k;
        int reps;
    };
    for (const Shape s : {Shape{4096, 1024, 20}, Shape{1024, 4096, 20}, Shape{250880, 1024, 2}}) {
        const auto x = random_uniform(s.k, 1);
        const auto block = random_uniform(std::size_t{64} * s.k, 2);
        const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
        const DeviceTensor yb = nan_tensor(ctx(), s.n, DType::F32, "Y");
        Timing dense{};
        {
            Buffer w = ctx().create_buffer(std::uint64_t{s.n} * s.k * 2, MemoryKind::Device, "W f16");
            upload_repeated(ctx(), w, block, DType::F16, std::uint64_t{s.n} * s.k);
            const MatmulArgs args{.x = xb.range(),
                                  .w = whole(w),
                                  .y = yb.range(),
                                  .m = 1,
                                  .n = s.n,
                                  .k = s.k,
                                  .weight_dtype = DType::F16};
            dense = best_ms(ctx(), args, s.reps);
            std::printf("n %6u k %5u  f16   wall %8.3f ms  cpu %8.3f ms                      (%s)\n", s.n, s.k,
                        dense.wall_ms, dense.cpu_ms,
                        plan_matmul(matmul_device(ctx()), 1, s.n, s.k, DType::F16).describe().c_str());
        }
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            // 64 random rows repeated: the kernels read every byte whatever the values.
            const QuantMatrix q = quantize(f, block, 64, s.k);
            auto [v, sc] = repeated_rows(ctx(), f, q, s.n, s.k);
            // The kernel Auto picks, and the blocked one (the fallback without subgroups).
            for (MatmulKernel kernel : {MatmulKernel::Auto, MatmulKernel::Blocked}) {
                const MatmulOptions options{.kernel = kernel};
                const MatmulArgs args{.x = xb.range(),
                                      .w = whole(v),
                                      .y = yb.range(),
                                      .m = 1,
                                      .n = s.n,
                                      .k = s.k,
                                      .weight_dtype = DType::F16,
                                      .options = options,
                                      .quant = f,
                                      .scales = whole(sc)};
                const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), 1, s.n, s.k, DType::F16, options, f);
                Buffer scratch;
                if (scratch_bytes > 0) {
                    scratch = ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch");
                }
                MatmulArgs with_scratch = args;
                with_scratch.scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{};
                const Timing t = best_ms(ctx(), with_scratch, s.reps);
                std::printf("n %6u k %5u  %s  wall %8.3f ms  cpu %8.3f ms  vs f16: wall %.2fx cpu %.2fx  (%s)\n", s.n,
                            s.k, to_string(f), t.wall_ms, t.cpu_ms, dense.wall_ms / t.wall_ms, dense.cpu_ms / t.cpu_ms,
                            plan_matmul(matmul_device(ctx()), 1, s.n, s.k, DType::F16, options, f).describe().c_str());
            }
        }
    }
}

// The integer dot-product path: opt-in (int8_activations), blocked kernel, on devices with
// shaderIntegerDotProduct (lavapipe 22.3 has it).
bool has_int_dot(Context& ctx) {
    return ctx.limits().integer_dot_product;
}

TEST_F(MatmulQuant, IntegerDotPathMatchesItsReferenceOverOddShapesEpiloguesAndSplits) {
    if (!has_int_dot(ctx()))
        GTEST_SKIP() << "no shaderIntegerDotProduct on this device";
    std::uint64_t seed = 9000;
    std::uint32_t step = 0;
    for (Case c : odd_shape_grid()) {
        c.options = {.force_splits = step % 5 == 2 ? 3u : 0u, .int8_activations = true};
        c.w_pad = step % 7 == 4 ? 1u : 0u;
        ++step;
        const MatmulPlan plan = run_case(ctx(), c, seed += 10);
        EXPECT_TRUE(plan.int_dot) << plan.describe();
        EXPECT_EQ(plan.kernel, MatmulKernel::Blocked) << plan.describe();
        EXPECT_GT(plan.scratch_bytes, 0u) << plan.describe();
        if (HasFatalFailure())
            return;
    }
    // Every epilogue with both formats and bias types, split-K, decode shapes, long K.
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (DType bt : {DType::F32, DType::F16}) {
            for (std::uint32_t a = 0; a < 3; ++a) {
                run_case(ctx(),
                         Case{.m = 1 + 6 * a,
                              .n = 37,
                              .k = 352,
                              .quant = f,
                              .bias_dtype = bt,
                              .bias = true,
                              .residual = a != 1,
                              .activation = activation_of(a),
                              .options = {.kernel = MatmulKernel::Blocked,
                                          .force_splits = a == 2 ? 3u : 0u,
                                          .int8_activations = true},
                              .pad = a == 1 ? 3u : 0u},
                         seed++);
            }
        }
        const auto plan = run_case(
            ctx(), Case{.m = 1, .n = 8, .k = 4096, .quant = f, .bias = true, .options = {.int8_activations = true}},
            seed++);
        EXPECT_GT(plan.n_splits, 1u) << plan.describe();
        run_case(ctx(),
                 Case{.m = 64,
                      .n = 300,
                      .k = 1024,
                      .quant = f,
                      .bias_dtype = DType::F16,
                      .bias = true,
                      .activation = Activation::GeluErf,
                      .options = {.int8_activations = true}},
                 seed++);
        run_case(ctx(),
                 Case{.m = 2,
                      .n = 3,
                      .k = (1u << 18) + 96,
                      .quant = f,
                      .bias = true,
                      .options = {.force_splits = 1, .int8_activations = true}},
                 seed++);
    }
}

TEST_F(MatmulQuant, IntegerDotPathIsOptInAndFallsBack) {
    // Not asked for: the float kernels, whatever the device has.
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        EXPECT_FALSE(plan_matmul(matmul_device(ctx()), 1, 64, 1024, DType::F32, {}, f).int_dot);
        EXPECT_FALSE(plan_matmul(matmul_device(ctx()), 64, 64, 1024, DType::F32, {}, f).int_dot);
        // Dense weights ignore it.
        EXPECT_FALSE(plan_matmul(matmul_device(ctx()), 1, 64, 1024, DType::F32, {.int8_activations = true}).int_dot);
        if (rowdot_runs(ctx())) {
            // A forced row-dot kernel has no integer path: the float one runs.
            const auto plan = run_case(ctx(),
                                       Case{.m = 1,
                                            .n = 37,
                                            .k = 224,
                                            .quant = f,
                                            .bias = true,
                                            .options = {.kernel = MatmulKernel::RowDot, .int8_activations = true}},
                                       9500);
            EXPECT_FALSE(plan.int_dot);
            EXPECT_EQ(plan.kernel, MatmulKernel::RowDot);
        }
    }
    // no_integer_dot: asked for, but the float blocked kernel runs, against the
    // dequantized-weight reference at the fp32 tolerance (run_case picks it by plan.int_dot).
    MessageSink sink;
    Context no_dot(test_options(sink, LimitOverrides::parse("no_integer_dot")));
    EXPECT_FALSE(no_dot.limits().integer_dot_product);
    if (has_int_dot(ctx())) {
        EXPECT_TRUE(no_dot.limits().forced);
    }
    std::uint64_t seed = 9600;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (const Case& c : {Case{.m = 1, .n = 37, .k = 224, .bias = true},
                              Case{.m = 29, .n = 70, .k = 96, .residual = true, .activation = Activation::GeluTanh},
                              Case{.m = 5, .n = 19, .k = 352, .bias = true, .options = {.force_splits = 3}}}) {
            Case with = c;
            with.quant = f;
            with.options.int8_activations = true;
            const MatmulPlan plan = run_case(no_dot, with, seed++);
            EXPECT_FALSE(plan.int_dot) << plan.describe();
            EXPECT_EQ(plan.kernel, MatmulKernel::Blocked) << plan.describe();
            EXPECT_EQ(plan.xq_scratch_bytes, 0u);
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantForcedLimits, IntegerDotPathUnderPhoneLimitsAndASmallStorageRange) {
    std::uint64_t seed = 9700;
    for (const char* spec : {"phone", "shared_memory=512,workgroup_invocations=16,workgroup_count=3", "no_int64",
                             "storage_buffer_range=64K"}) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        if (!has_int_dot(ctx))
            GTEST_SKIP() << "no shaderIntegerDotProduct on this device";
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            for (const Case& c :
                 {Case{.m = 1, .n = 37, .k = 224, .bias = true, .pad = 1},
                  Case{.m = 29, .n = 70, .k = 96, .residual = true, .activation = Activation::GeluTanh, .w_pad = 1},
                  Case{.m = 129,
                  .n = 700,
                  .k = 192,
                  .bias_dtype = DType::F16,
                  .bias = true,
                  .residual = true,
                  .activation = Activation::GeluErf},
                  Case{.m = 3, .n = 301, .k = 192, .options = {.force_splits = 4}}}) {
                Case with = c;
                with.quant = f;
                with.options.int8_activations = true;
                const MatmulPlan plan = run_case(ctx, with, seed++);
                EXPECT_TRUE(plan.int_dot) << plan.describe();
                EXPECT_LE(plan.workgroup_size, ctx.limits().workgroup_invocations) << plan.describe();
                if (std::string(spec) == "storage_buffer_range=64K" && c.m == 129) {
                    EXPECT_LT(plan.rows_per_piece, 129u) << plan.describe();  // X quantized piece by piece
                    EXPECT_LT(plan.cols_per_piece, 700u) << plan.describe();
                }
            }
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

// What rounding X to int8 costs: the integer path against the reference on the exactly
// dequantized weights and fp32 X (printed; bounded loosely, a few times what was measured).
TEST_F(MatmulQuant, IntegerDotPathErrorAgainstTheDequantizedWeightReference) {
    if (!has_int_dot(ctx()))
        GTEST_SKIP() << "no shaderIntegerDotProduct on this device";
    std::uint64_t seed = 9800;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (const auto [m, n, k] : {std::array<std::uint32_t, 3>{1, 1024, 1024}, {1, 1024, 4096}, {64, 256, 1024}}) {
            const auto x = random_uniform(std::size_t{m} * k, seed++, -1.0f, 1.0f);
            const auto w = random_uniform(std::size_t{n} * k, seed++, -1.0f, 1.0f);
            const QuantMatrix q = quantize(f, w, n, k);
            const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
            const DeviceTensor vb = upload_values(ctx(), q.values);
            const DeviceTensor sb = upload_scales(ctx(), q.scales);
            const DeviceTensor yb = nan_tensor(ctx(), std::uint64_t{m} * n, DType::F32, "Y");
            const MatmulOptions options{.int8_activations = true};
            const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), m, n, k, DType::F32, options, f);
            Buffer scratch = ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch");
            poison(ctx(), scratch);
            auto list = ctx().command_list();
            record_matmul(ctx(), *list,
                          MatmulArgs{.x = xb.range(),
                                     .w = vb.range(),
                                     .y = yb.range(),
                                     .scratch = whole(scratch),
                                     .m = m,
                                     .n = n,
                                     .k = k,
                                     .options = options,
                                     .quant = f,
                                     .scales = sb.range()});
            ctx().submit(*list);
            std::vector<float> out(std::size_t{m} * n);
            ctx().download(yb.buffer(), std::span(out));
            const ErrorStats e = compare_to_reference(out, reference::matmul(x, q.dequantized, {}, {}, m, n, k));
            std::printf("int8 X vs fp32 X, %s weights, m %u n %u k %u: %s\n", to_string(f), m, n, k,
                        describe(e).c_str());
            EXPECT_EQ(e.first_nonfinite, SIZE_MAX);
            EXPECT_LT(e.rel_l2, 3e-2) << describe(e);
        }
    }
}

// Timings of the integer path against the float quantized kernels (printed, never asserted;
// VKF_QUANT_TIMINGS=1 to run): m = 1 and m = 64 on BLOOM-560m's MLP shapes. The integer
// figures include the pre-pass quantizing X.
TEST_F(MatmulQuant, IntegerDotTimings) {
    if (std::getenv("VKF_QUANT_TIMINGS") == nullptr)
        GTEST_SKIP() << "set VKF_QUANT_TIMINGS=1 to time the integer path";
    if (!has_int_dot(ctx()))
        GTEST_SKIP() << "no shaderIntegerDotProduct on this device";
    struct Shape {
        std::uint32_t m, n, k;
        int reps;
    };
    for (const Shape s :
         {Shape{1, 4096, 1024, 20}, Shape{1, 1024, 4096, 20}, Shape{64, 4096, 1024, 2}, Shape{64, 1024, 4096, 2}}) {
        const auto x = random_uniform(std::size_t{s.m} * s.k, 1);
        const auto block = random_uniform(std::size_t{64} * s.k, 2);
        const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
        const DeviceTensor yb = nan_tensor(ctx(), std::uint64_t{s.m} * s.n, DType::F32, "Y");
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            const QuantMatrix q = quantize(f, block, 64, s.k);
            auto [v, sc] = repeated_rows(ctx(), f, q, s.n, s.k);
            Timing float_t{};
            for (const bool int8 : {false, true}) {
                const MatmulOptions options{.int8_activations = int8};
                const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), s.m, s.n, s.k, DType::F16, options, f);
                Buffer scratch;
                if (scratch_bytes > 0) {
                    scratch = ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch");
                }
                const MatmulArgs args{.x = xb.range(),
                                      .w = whole(v),
                                      .y = yb.range(),
                                      .scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                                      .m = s.m,
                                      .n = s.n,
                                      .k = s.k,
                                      .weight_dtype = DType::F16,
                                      .options = options,
                                      .quant = f,
                                      .scales = whole(sc)};
                const Timing t = best_ms(ctx(), args, s.reps);
                if (!int8) {
                    float_t = t;
                }
                std::printf(
                    "m %3u n %5u k %5u  %s %s  wall %8.3f ms  cpu %8.3f ms  vs float: wall %.2fx cpu %.2fx  (%s)\n",
                    s.m, s.n, s.k, to_string(f), int8 ? "int8 X" : "fp32 X", t.wall_ms, t.cpu_ms,
                    float_t.wall_ms / t.wall_ms, float_t.cpu_ms / t.cpu_ms,
                    plan_matmul(matmul_device(ctx()), s.m, s.n, s.k, DType::F16, options, f).describe().c_str());
            }
        }
    }
}

}  // namespace
}  // namespace vkf::test
