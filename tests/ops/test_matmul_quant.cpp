// Matmul with block-quantized weights (q8_0, q4_0) against the double-precision CPU
// reference run on the exactly dequantized weights (dequantize_row), so the fp32 tolerance
// holds: seeded random inputs over odd and prime shapes, k multiples of 32 (powers of two
// and not), decode (m = 1) and prefill shapes, both kernels and every epilogue, split-K,
// long K under llvmpipe's loop limit, tensors at unaligned offsets, weights bound in row
// ranges and forced smaller limits (phone, no subgroup operations). Outputs are poisoned
// (NaN) before every run. The integer dot-product path: test_matmul_quant_int8.cpp.

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
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace vkf::test {
namespace {

class MatmulQuant : public VulkanTest {};

TEST_F(MatmulQuant, MatchesTheReferenceOverOddAndPrimeShapes) {
    std::uint64_t seed = 100;
    for (const Case& c : odd_shape_grid()) {
        const MatmulPlan plan = run_case(ctx(), c, seed += 10);
        EXPECT_EQ(plan.kernel, expected_kernel(ctx(), c.m)) << plan.describe();
        if (HasFatalFailure())
            return;
    }
}

TEST_F(MatmulQuant, EveryKernelWithEveryEpilogueBothFormatsAndBiasTypes) {
    std::uint64_t seed = 1000;
    for (MatmulKernel kernel : {MatmulKernel::RowDot, MatmulKernel::Blocked}) {
        if (kernel == MatmulKernel::RowDot && !rowdot_runs(ctx()))
            continue;  // no subgroup arithmetic, or full subgroups cannot be required
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            for (DType bt : {DType::F32, DType::F16}) {
                for (std::uint32_t a = 0; a < 3; ++a) {
                    const MatmulPlan plan = run_case(ctx(),
                                                     Case{.m = 1 + 6 * a,
                                                          .n = 37,
                                                          .k = 160,
                                                          .quant = f,
                                                          .bias_dtype = bt,
                                                          .bias = true,
                                                          .residual = a != 1,
                                                          .activation = activation_of(a),
                                                          .options = {.kernel = kernel}},
                                                     seed++);
                    EXPECT_EQ(plan.kernel, kernel);
                }
                // Unaligned tensors: X, bias, residual, Y and scales an odd number of elements
                // in, the values one word in (scalar loads instead of vectors), and both.
                run_case(ctx(),
                         Case{.m = 2,
                              .n = 11,
                              .k = 96,
                              .quant = f,
                              .bias_dtype = bt,
                              .bias = true,
                              .residual = true,
                              .options = {.kernel = kernel},
                              .pad = 3},
                         seed++);
                run_case(ctx(), Case{.m = 3, .n = 13, .k = 544, .quant = f, .options = {.kernel = kernel}, .w_pad = 1},
                         seed++);
                run_case(ctx(),
                         Case{.m = 1,
                              .n = 7,
                              .k = 64,
                              .quant = f,
                              .bias_dtype = bt,
                              .bias = true,
                              .options = {.kernel = kernel},
                              .pad = 1,
                              .w_pad = 2},
                         seed++);
            }
        }
    }
}

TEST_F(MatmulQuant, DecodeAndPrefillShapes) {
    std::uint64_t seed = 2000;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        // BLOOM-560m's rows (hidden 1024, MLP 4096) at m = 1, and prefill blocks.
        auto plan =
            run_case(ctx(), Case{.m = 1, .n = 1024, .k = 1024, .quant = f, .bias = true, .residual = true}, seed++);
        EXPECT_EQ(plan.kernel, expected_kernel(ctx(), 1));
        run_case(ctx(),
                 Case{.m = 1,
                      .n = 4096,
                      .k = 1024,
                      .quant = f,
                      .bias_dtype = DType::F16,
                      .bias = true,
                      .activation = Activation::GeluTanh},
                 seed++);
        run_case(ctx(), Case{.m = 1, .n = 1024, .k = 4096, .quant = f, .bias = true, .residual = true}, seed++);
        // A small output over a long row splits K for parallelism.
        plan = run_case(ctx(), Case{.m = 1, .n = 8, .k = 4096, .quant = f, .bias = true}, seed++);
        EXPECT_GT(plan.n_splits, 1u) << plan.describe();
        plan = run_case(ctx(),
                        Case{.m = 67,
                             .n = 300,
                             .k = 1056,
                             .quant = f,
                             .bias_dtype = DType::F16,
                             .bias = true,
                             .activation = Activation::GeluErf},
                        seed++);
        EXPECT_EQ(plan.kernel, MatmulKernel::Blocked);
    }
}

TEST_F(MatmulQuant, SplitKAddsTheSlicesBeforeTheEpilogue) {
    std::uint64_t seed = 4000;
    for (MatmulKernel kernel : {MatmulKernel::RowDot, MatmulKernel::Blocked}) {
        if (kernel == MatmulKernel::RowDot && !rowdot_runs(ctx()))
            continue;  // no subgroup arithmetic, or full subgroups cannot be required
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            for (DType bt : {DType::F32, DType::F16}) {
                const auto plan = run_case(ctx(),
                                           Case{.m = 5,
                                                .n = 19,
                                                .k = 352,
                                                .quant = f,
                                                .bias_dtype = bt,
                                                .bias = true,
                                                .residual = true,
                                                .activation = Activation::GeluErf,
                                                .options = {.kernel = kernel, .force_splits = 3},
                                                .pad = 1},
                                           seed++);
                EXPECT_GE(plan.n_splits, 3u);
                EXPECT_EQ(plan.k_split % 32, 0u);
                EXPECT_GT(plan.scratch_bytes, 0u);
            }
        }
    }
}

TEST_F(MatmulQuant, LongKStaysRightOnDriversWithALoopLimit) {
    // llvmpipe skips loop iterations past 65535 per invocation (runtime/quirks.cpp). The
    // blocked kernel loops once per block: K = 2^20 + 96 (32771 blocks) must split there.
    // force_splits = 1 turns off splitting for parallelism: only the loop limit splits here.
    std::uint64_t seed = 5000;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (MatmulKernel kernel : {MatmulKernel::Auto, MatmulKernel::Blocked}) {
            run_case(ctx(), Case{.m = 1, .n = 9, .k = 16384, .quant = f, .bias = true, .options = {kernel, 1}}, seed++);
            run_case(ctx(), Case{.m = 3, .n = 5, .k = 16384, .quant = f, .residual = true, .options = {kernel, 1}},
                     seed++);
        }
        const auto plan = run_case(ctx(),
                                   Case{.m = 2,
                                        .n = 3,
                                        .k = (1u << 20) + 96,
                                        .quant = f,
                                        .bias = true,
                                        .options = {.kernel = MatmulKernel::Blocked, .force_splits = 1}},
                                   seed++);
        if (ctx().limits().max_loop_iterations != 0) {
            EXPECT_GT(plan.n_splits, 1u) << plan.describe();
        }
    }
}

TEST_F(MatmulQuant, ResidualMayBeTheOutput) {
    const std::uint32_t m = 7, n = 45, k = 96;
    const auto x = random_uniform(m * k, 6000), w = random_uniform(n * k, 6001), r = random_uniform(m * n, 6002);
    const QuantMatrix q = quantize(QuantFormat::Q4_0, w, n, k);
    const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
    const DeviceTensor vb = upload_values(ctx(), q.values);
    const DeviceTensor sb = upload_scales(ctx(), q.scales);
    const DeviceTensor yb = upload_tensor(ctx(), r, DType::F32, "Y = residual");
    // Scratch where the plan takes it (the separate epilogue of devices with 4 storage buffers).
    const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), m, n, k, DType::F32, {}, QuantFormat::Q4_0);
    const Buffer scratch =
        scratch_bytes > 0 ? ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch") : Buffer{};
    auto list = ctx().command_list();
    record_matmul(ctx(), *list,
                  MatmulArgs{.x = xb.range(),
                             .w = vb.range(),
                             .residual = yb.range(),
                             .y = yb.range(),
                             .scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                             .m = m,
                             .n = n,
                             .k = k,
                             .quant = QuantFormat::Q4_0,
                             .scales = sb.range()});
    ctx().submit(*list);
    std::vector<float> out(m * n);
    ctx().download(yb.buffer(), std::span(out));
    const ErrorStats e = compare_to_reference(out, reference::matmul(x, q.dequantized, {}, r, m, n, k));
    EXPECT_LT(e.max_rel, tolerance(DType::F32)) << describe(e);
}

TEST_F(MatmulQuant, BadArgumentsAreRefusedNamingTheTensor) {
    auto expect_error = [](auto&& fn, const std::string& needle) {
        try {
            fn();
            ADD_FAILURE() << "no error; expected '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    // X [8, 96], W q8_0 [5, 96]: 96 value bytes and 3 scales a row (one block a step, so
    // that K can be split).
    Buffer x = ctx().create_buffer(4 * 8 * 96, MemoryKind::Device, "x");
    Buffer v = ctx().create_buffer(5 * 96, MemoryKind::Device, "values");
    Buffer s = ctx().create_buffer(32, MemoryKind::Device, "scales");  // 30 bytes, padded to whole words
    Buffer y = ctx().create_buffer(4 * 8 * 5, MemoryKind::Device, "y");
    // Scratch only where the plan takes it (the separate epilogue of 4 storage buffers).
    const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), 8, 5, 96, DType::F32, {}, QuantFormat::Q8_0);
    Buffer scratch = scratch_bytes > 0 ? ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch") : Buffer{};
    auto list = ctx().command_list();
    const MatmulArgs ok{.x = whole(x),
                        .w = whole(v),
                        .y = whole(y),
                        .scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                        .m = 8,
                        .n = 5,
                        .k = 96,
                        .quant = QuantFormat::Q8_0,
                        .scales = BufferRange{.buffer = &s, .offset = 0, .size = 30}};
    EXPECT_NO_THROW(record_matmul(ctx(), *list, ok));
    MatmulArgs bad = ok;
    bad.k = 48;
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "[8, 5, 48] with q8_0 weights: k = 48 is not a multiple");
    expect_error([&] { (void)matmul_scratch_bytes(ctx(), 1, 5, 100, DType::F32, {}, QuantFormat::Q4_0); },
                 "k = 100 is not a multiple of the block size 32");
    bad = ok;
    bad.quant = QuantFormat::Q4_0;  // q4_0 rows are 48 bytes: the values range is twice too long
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W values [5, 48] bytes (q4_0) needs a range of 240 bytes");
    bad = ok;
    bad.scales = BufferRange{.buffer = &s, .offset = 0, .size = 16};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W scales [5, 3] f16 (q8_0) needs a range of 30 bytes");
    bad = ok;
    bad.scales = {};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W scales [5, 3] f16 (q8_0) has no buffer");
    bad = ok;
    bad.w = BufferRange{.buffer = &v, .offset = 2, .size = 5 * 96 - 4};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W values");
    bad = ok;
    bad.bias = whole(y);
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "bias [5] f32");
    bad = ok;
    bad.weight_dtype = DType::BF16;
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "must be f32 or f16");
    bad = ok;
    bad.options = {.kernel = MatmulKernel::Tiled};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "tiled kernel does not read q8_0 weights");
    bad = ok;
    bad.options = {.kernel = MatmulKernel::Blocked, .force_splits = 2};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "needs a scratch range");
}

// A few cases of both kernels (where they fit) on a context with forced limits.
void run_forced(const char* spec, std::uint64_t seed) {
    SCOPED_TRACE(spec);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse(spec)));
    for (MatmulKernel kernel : {MatmulKernel::Auto, MatmulKernel::RowDot, MatmulKernel::Blocked}) {
        try {
            (void)plan_matmul(matmul_device(ctx), 29, 70, 96, DType::F32, {.kernel = kernel}, QuantFormat::Q8_0);
        } catch (const Error&) {
            continue;  // does not fit these limits; Auto never throws
        }
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            for (const Case& c : {Case{.m = 1, .n = 37, .k = 224, .bias = true},
                                  Case{.m = 29, .n = 70, .k = 96, .residual = true, .activation = Activation::GeluTanh},
                                  Case{.m = 67,
                                  .n = 5,
                                  .k = 1024,
                                  .bias_dtype = DType::F16,
                                  .bias = true,
                                  .activation = Activation::GeluErf}}) {
                Case with = c;
                with.quant = f;
                with.options.kernel = kernel;
                const MatmulPlan plan = run_case(ctx, with, seed++);
                EXPECT_LE(plan.workgroup_size, ctx.limits().workgroup_invocations) << plan.describe();
                EXPECT_EQ(plan.wide_loads, ctx.limits().int64) << plan.describe();
            }
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantForcedLimits, PhoneAndSmallDevicesStayRight) {
    run_forced("phone", 7000);
    run_forced("shared_memory=512,workgroup_invocations=16,workgroup_count=3", 7200);
}

TEST(MatmulQuantForcedLimits, FourStorageBuffersTakeTheSeparateEpilogue) {
    // Vulkan's minimum of 4 storage buffers per stage: the kernels write partial sums (X, the
    // values, the scales, P) and the reduce pass applies bias, activation and residual; the
    // integer dot-product path too (its quantized X and the partial sums share the scratch).
    run_forced("storage_buffers=4", 8100);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=4")));
    std::uint64_t seed = 8300;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (std::uint32_t splits : {0u, 3u}) {
            Case c{.m = 5,
                   .n = 70,
                   .k = 256,
                   .quant = f,
                   .bias_dtype = DType::F16,
                   .bias = true,
                   .residual = true,
                   .activation = Activation::GeluTanh};
            c.options.int8_activations = true;
            c.options.force_splits = splits;
            const MatmulPlan plan = run_case(ctx, c, seed++);
            EXPECT_TRUE(plan.separate_epilogue) << plan.describe();
            EXPECT_EQ(plan.int_dot, ctx.limits().integer_dot_product) << plan.describe();
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantForcedLimits, WithoutSubgroupOpsOrInt64TheFallbacksStayRight) {
    {
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_ops")));
        EXPECT_THROW((void)plan_matmul(matmul_device(ctx), 1, 64, 64, DType::F32, {.kernel = MatmulKernel::RowDot},
                                       QuantFormat::Q8_0),
                     Error);
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            const auto plan = run_case(ctx, Case{.m = 1, .n = 300, .k = 1024, .quant = f, .bias = true}, 7500);
            EXPECT_EQ(plan.kernel, MatmulKernel::Blocked);
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    run_forced("no_subgroup_ops", 7600);
    run_forced("no_int64", 7700);
}

TEST(MatmulQuantForcedLimits, WithoutSubgroupSizeControlDecodingTakesTheBlockedKernel) {
    // no_subgroup_size_control: the row-dot kernel (subgroup arithmetic over full subgroups of
    // the planned size) is never chosen, not even for a GPU's decoding, and forcing it is refused.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_size_control")));
    EXPECT_FALSE(ctx.limits().subgroup_size_control);
    std::uint64_t seed = 7800;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (const bool cpu : {true, false}) {
            const MatmulDevice device{.limits = ctx.limits(), .cpu = cpu};
            for (std::uint32_t m : {1u, 4u}) {
                const auto plan = plan_matmul(device, m, 4096, 1024, DType::F16, {}, f);
                EXPECT_EQ(plan.kernel, MatmulKernel::Blocked) << plan.describe();
                EXPECT_EQ(plan.describe().find("rowdot"), std::string::npos) << plan.describe();
            }
            try {
                (void)plan_matmul(device, 1, 64, 64, DType::F32, {.kernel = MatmulKernel::RowDot}, f);
                ADD_FAILURE() << "a forced row-dot kernel was planned without subgroup size control";
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("full subgroups of a required size"), std::string::npos)
                    << e.what();
            }
        }
        // Decoding on the device as it is, against the dequantized-weight reference.
        for (std::uint32_t m : {1u, 3u}) {
            const auto plan =
                run_case(ctx, Case{.m = m, .n = 300, .k = 1024, .quant = f, .bias = true, .residual = true}, seed++);
            EXPECT_EQ(plan.kernel, MatmulKernel::Blocked) << plan.describe();
        }
    }
    run_forced("no_subgroup_size_control", 7900);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantForcedLimits, WeightsLargerThanTheStorageRangeAreBoundInRowRanges) {
    // 64 KiB bindings: W [700, 192] is 134 KB of q8_0 values (67 KB q4_0), and X and Y come
    // in row pieces too, like BLOOM's 250880 x 1024 lm_head against lavapipe's 128 MiB.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffer_range=64K")));
    std::uint64_t seed = 8000;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        auto plan =
            run_case(ctx, Case{.m = 1, .n = 700, .k = 192, .quant = f, .bias = true, .pad = 1, .w_pad = 1}, seed++);
        EXPECT_LT(plan.cols_per_piece, 700u) << plan.describe();
        plan = run_case(ctx,
                        Case{.m = 129,
                             .n = 700,
                             .k = 192,
                             .quant = f,
                             .bias_dtype = DType::F16,
                             .bias = true,
                             .residual = true,
                             .activation = Activation::GeluTanh},
                        seed++);
        EXPECT_LT(plan.cols_per_piece, 700u) << plan.describe();
        EXPECT_LT(plan.rows_per_piece, 129u) << plan.describe();
        plan = run_case(ctx, Case{.m = 3, .n = 301, .k = 192, .quant = f, .options = {.force_splits = 4}}, seed++);
        EXPECT_LE(plan.scratch_bytes, ctx.limits().storage_buffer_range);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
