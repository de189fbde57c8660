// The matmul's plans over made-up devices: kernels, tiles, K slices and pieces, and the
// answers to fused work (MatmulOptions::scatter and x_norm): the scatter where the storage
// buffers per stage allow its kernels (7 dense, 8 quantized), the fused LayerNorm only on
// the row-dot kernel of dense weights, for short rows unless the kernel is forced, and with
// the buffers it adds. And record_matmul(plan, args) refusing args that do not match the
// plan, before anything is recorded.

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"
#include "host/util/random.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/vulkan_test.hpp"

#include <functional>

namespace vkf::test {
namespace {

// A desktop-like device with `storage_buffers` per stage, subgroups of 8 and 64-bit loads;
// `cpu`: a CPU implementation (the row-dot kernel decodes there).
MatmulDevice device(std::uint32_t storage_buffers, bool cpu) {
    ComputeLimits l;
    l.shared_memory = 32768;
    l.workgroup_invocations = 1024;
    l.workgroup_size = {1024, 1024, 64};
    l.workgroup_count = {65535, 65535, 65535};
    l.push_constants = 128;
    l.storage_buffer_range = std::uint64_t{1} << 30;
    l.storage_offset_alignment = 16;
    l.storage_buffers = storage_buffers;
    l.subgroup_size = 8;
    l.subgroup_ops = true;
    l.subgroup_size_control = true;
    l.int64 = true;
    l.fp16_storage = true;
    return MatmulDevice{.limits = l, .cpu = cpu};
}

MatmulPlan plan(const MatmulDevice& d, std::uint32_t m, std::uint32_t k, MatmulOptions options,
                QuantFormat quant = QuantFormat::None) {
    return plan_matmul(d, m, 96, k, DType::F16, options, quant);
}

TEST(MatmulPlanAnswers, TheScatterWhereTheStorageBuffersAllowIt) {
    for (const std::uint32_t buffers : {4u, 5u, 6u, 7u, 8u, 12u}) {
        for (const bool cpu : {false, true}) {
            for (const QuantFormat quant : {QuantFormat::None, QuantFormat::Q8_0, QuantFormat::Q4_0}) {
                for (const std::uint32_t m : {1u, 5u, 64u}) {
                    for (const std::uint32_t splits : {0u, 2u}) {
                        const MatmulDevice d = device(buffers, cpu);
                        const MatmulOptions asked{.force_splits = splits, .scatter = true};
                        const MatmulPlan p = plan(d, m, 64, asked, quant);
                        SCOPED_TRACE(std::to_string(buffers) + " buffers: " + p.describe());
                        EXPECT_EQ(p.scatter, buffers >= (quant == QuantFormat::None ? 7u : 8u));
                        EXPECT_EQ(p.describe().find("QKV scatter") != std::string::npos, p.scatter);
                        // Not asked for: never.
                        EXPECT_FALSE(plan(d, m, 64, {.force_splits = splits}, quant).scatter);
                    }
                }
            }
        }
    }
    // Every dense kernel scatters.
    for (const MatmulKernel kernel :
         {MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::Blocked, MatmulKernel::RowDot}) {
        EXPECT_TRUE(plan(device(7, false), 3, 64, {.kernel = kernel, .scatter = true}).scatter) << to_string(kernel);
    }
}

TEST(MatmulPlanAnswers, TheLayerNormOnlyWhereTheRowDotKernelDoesItAndItPays) {
    const MatmulDevice cpu = device(16, true), gpu = device(16, false);
    const MatmulOptions asked{.x_norm = true};
    // Decoding on a CPU device takes the row-dot kernel: fused for rows up to 128.
    for (const std::uint32_t k : {16u, 64u, 127u, kLayerNormFusionMaxK}) {
        const MatmulPlan p = plan(cpu, 1, k, asked);
        EXPECT_EQ(p.kernel, MatmulKernel::RowDot) << p.describe();
        EXPECT_TRUE(p.x_norm) << p.describe();
        EXPECT_NE(p.describe().find("LayerNorm"), std::string::npos);
        EXPECT_FALSE(plan(cpu, 1, k, {}).x_norm) << "not asked for";
    }
    for (const std::uint32_t k : {kLayerNormFusionMaxK + 1, 256u, 1024u}) {
        EXPECT_FALSE(plan(cpu, 1, k, asked).x_norm) << "k " << k << ": costs more than the dispatch it saves";
        // A forced kernel is the caller's choice of cost.
        EXPECT_TRUE(plan(cpu, 1, k, {.kernel = MatmulKernel::RowDot, .x_norm = true}).x_norm) << "k " << k;
    }
    // Other kernels, quantized weights and the separate epilogue: never.
    EXPECT_FALSE(plan(cpu, 4, 64, asked).x_norm) << plan(cpu, 4, 64, asked).describe();  // blocked
    EXPECT_FALSE(plan(gpu, 1, 64, asked).x_norm) << plan(gpu, 1, 64, asked).describe();  // gemv
    for (const MatmulKernel kernel : {MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::Blocked}) {
        EXPECT_FALSE(plan(cpu, 1, 64, {.kernel = kernel, .x_norm = true}).x_norm) << to_string(kernel);
    }
    const MatmulPlan quant_rowdot = plan(gpu, 1, 64, asked, QuantFormat::Q8_0);
    EXPECT_EQ(quant_rowdot.kernel, MatmulKernel::RowDot);
    EXPECT_FALSE(quant_rowdot.x_norm);
    EXPECT_FALSE(plan(device(4, true), 1, 64, asked).x_norm);
    // Its weight and bias take 2 more buffers: 7 alone, 9 with the scatter.
    EXPECT_FALSE(plan(device(6, true), 1, 64, asked).x_norm);
    EXPECT_TRUE(plan(device(7, true), 1, 64, asked).x_norm);
    const MatmulOptions both{.scatter = true, .x_norm = true};
    for (const std::uint32_t buffers : {7u, 8u}) {
        const MatmulPlan p = plan(device(buffers, true), 1, 64, both);
        EXPECT_TRUE(p.scatter && !p.x_norm) << buffers << ": " << p.describe();
    }
    const MatmulPlan p = plan(device(9, true), 1, 64, both);
    EXPECT_TRUE(p.scatter && p.x_norm) << p.describe();
}

// fp16 arithmetic (MatmulArithmetic): by default on GPUs with shaderFloat16, in the kernels
// that have the form (the tiled and GEMV kernels on fp16 weights, the quantized float kernels); forced
// on CPU devices with F16; never without the feature (VKF_LIMITS no_fp16_arithmetic) or with F32.
TEST(MatmulPlanAnswers, Fp16ArithmeticWhereTheDeviceAndTheKernelHaveIt) {
    MatmulDevice gpu = device(16, false), cpu = device(16, true);
    gpu.limits.fp16_arithmetic = cpu.limits.fp16_arithmetic = true;
    const MatmulOptions f16{.arithmetic = MatmulArithmetic::F16}, f32{.arithmetic = MatmulArithmetic::F32};
    const auto f16_in = [](const MatmulDevice& d, std::uint32_t m, DType dtype, MatmulOptions o,
                           QuantFormat q = QuantFormat::None) {
        const MatmulPlan p = plan_matmul(d, m, 96, 1024, dtype, o, q);
        EXPECT_EQ(p.describe().find("fp16 arithmetic") != std::string::npos, p.f16_arithmetic) << p.describe();
        return p.f16_arithmetic;
    };
    EXPECT_TRUE(f16_in(gpu, 64, DType::F16, {}));   // tiled prefill
    EXPECT_FALSE(f16_in(gpu, 64, DType::F32, {}));  // fp32 weights stay fp32
    EXPECT_TRUE(f16_in(gpu, 1, DType::F16, {}));    // GEMV decode (GEMV_F16)
    EXPECT_FALSE(f16_in(gpu, 1, DType::F32, {}));   // GEMV on fp32 weights
    EXPECT_FALSE(f16_in(gpu, 1, DType::F16, f32));
    EXPECT_FALSE(f16_in(gpu, 64, DType::F16, f32));
    EXPECT_TRUE(f16_in(gpu, 1, DType::F32, {}, QuantFormat::Q8_0));   // quantized row-dot
    EXPECT_TRUE(f16_in(gpu, 64, DType::F16, {}, QuantFormat::Q4_0));  // quantized blocked
    MatmulOptions int8 = f16;
    int8.int8_activations = true;
    gpu.limits.integer_dot_product = true;
    EXPECT_FALSE(f16_in(gpu, 64, DType::F32, int8, QuantFormat::Q8_0));  // the int8 path
    // CPU devices: fp32 unless forced, and then only where the kernel has the form.
    EXPECT_FALSE(f16_in(cpu, 64, DType::F32, {}, QuantFormat::Q8_0));
    EXPECT_TRUE(f16_in(cpu, 64, DType::F32, f16, QuantFormat::Q8_0));
    EXPECT_FALSE(f16_in(cpu, 64, DType::F16, f16));  // the blocked kernel
    EXPECT_TRUE(f16_in(cpu, 64, DType::F16, {.kernel = MatmulKernel::Tiled, .arithmetic = MatmulArithmetic::F16}));
    EXPECT_TRUE(f16_in(cpu, 1, DType::F16, {.kernel = MatmulKernel::Gemv, .arithmetic = MatmulArithmetic::F16}));
    EXPECT_FALSE(f16_in(cpu, 1, DType::F16, {.kernel = MatmulKernel::Gemv}));
    // Without the feature F16 is fp32, and the tiled kernel's fp16 tiles take half the memory.
    MatmulDevice no_fp16 = gpu;
    no_fp16.limits.fp16_arithmetic = false;
    EXPECT_FALSE(f16_in(no_fp16, 64, DType::F16, f16));
    EXPECT_FALSE(f16_in(no_fp16, 1, DType::F16, f16));
    EXPECT_FALSE(f16_in(no_fp16, 1, DType::F32, f16, QuantFormat::Q4_0));
    EXPECT_EQ(2 * plan_matmul(gpu, 64, 96, 1024, DType::F16).shared_bytes,
              plan_matmul(no_fp16, 64, 96, 1024, DType::F16).shared_bytes);
}

// Kernels, tiles, slices and pieces (moved from test_matmul.cpp, which runs them).
TEST(MatmulPlans, TilesAndSlicesFollowTheLimits) {
    const ComputeLimits gpu_limits{.shared_memory = 49152,
                                   .workgroup_invocations = 1024,
                                   .workgroup_size = {1024, 1024, 64},
                                   .workgroup_count = {65535, 65535, 65535},
                                   .storage_buffer_range = 1ull << 32,
                                   .storage_offset_alignment = 16,
                                   .storage_buffers = 8};
    const MatmulDevice big{.limits = gpu_limits};
    const auto prefill = plan_matmul(big, 512, 4096, 1024, DType::F16);
    EXPECT_EQ(prefill.kernel, MatmulKernel::Tiled);
    EXPECT_EQ(prefill.tile_m * prefill.tile_n, 64u * 64u);
    EXPECT_EQ(prefill.n_splits, 1u);
    EXPECT_EQ(plan_matmul(big, 1, 4096, 1024, DType::F16).kernel, MatmulKernel::Gemv);
    EXPECT_EQ(plan_matmul(big, 12, 4096, 1024, DType::F16).tile_m, 16u);  // no 64-row tiles for 12 rows

    // A CPU device takes register blocks: one row for decoding, four otherwise.
    const MatmulDevice cpu{.limits = gpu_limits, .cpu = true};
    const auto blocked = plan_matmul(cpu, 3, 4096, 1024, DType::F16);
    EXPECT_EQ(blocked.kernel, MatmulKernel::Blocked);
    EXPECT_EQ(blocked.block_m, 4u);
    EXPECT_EQ(plan_matmul(cpu, 1, 4096, 1024, DType::F16).block_m, 1u);
    // With subgroup arithmetic, row dots for single rows; GPUs keep their kernels.
    MatmulDevice cpu_subgroups = cpu;
    cpu_subgroups.limits.subgroup_ops = true;
    cpu_subgroups.limits.subgroup_size_control = true;
    cpu_subgroups.limits.subgroup_size = 8;
    const auto rowdot = plan_matmul(cpu_subgroups, 1, 4096, 1024, DType::F16);
    EXPECT_EQ(rowdot.kernel, MatmulKernel::RowDot);
    EXPECT_EQ(rowdot.block_m, 1u);
    EXPECT_EQ(rowdot.workgroup_size, rowdot.column_groups * 8);
    EXPECT_EQ(plan_matmul(cpu_subgroups, 2, 4096, 1024, DType::F16).kernel, MatmulKernel::Blocked);
    // Without full subgroups of a required size: register blocks, and a forced row-dot kernel
    // is refused.
    MatmulDevice cpu_no_size_control = cpu_subgroups;
    cpu_no_size_control.limits.subgroup_size_control = false;
    EXPECT_EQ(plan_matmul(cpu_no_size_control, 1, 4096, 1024, DType::F16).kernel, MatmulKernel::Blocked);
    EXPECT_THROW((void)plan_matmul(cpu_no_size_control, 1, 4096, 1024, DType::F16, {.kernel = MatmulKernel::RowDot}),
                 Error);
    MatmulDevice gpu_subgroups = big;
    gpu_subgroups.limits.subgroup_ops = true;
    gpu_subgroups.limits.subgroup_size_control = true;
    gpu_subgroups.limits.subgroup_size = 32;
    EXPECT_EQ(plan_matmul(gpu_subgroups, 1, 4096, 1024, DType::F16).kernel, MatmulKernel::Gemv);

    // A loop limit like llvmpipe's: every plan keeps each invocation under half of it.
    MatmulDevice limited = big;
    limited.limits.max_loop_iterations = 65535;
    for (std::uint32_t k : {16384u, 70000u, 1u << 20}) {
        MatmulDevice limited_subgroups = limited;
        limited_subgroups.limits.subgroup_ops = true;
        limited_subgroups.limits.subgroup_size_control = true;
        limited_subgroups.limits.subgroup_size = 8;
        for (MatmulKernel kernel :
             {MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::Blocked, MatmulKernel::RowDot}) {
            for (std::uint32_t m : {1u, 300u}) {
                const auto p = plan_matmul(limited_subgroups, m, 4096, k, DType::F32, {.kernel = kernel});
                EXPECT_LE(p.loop_iterations, 65535u / 2) << p.describe();
                EXPECT_GE(std::uint64_t{p.k_split} * p.n_splits, k);
            }
        }
        EXPECT_EQ(plan_matmul(big, 300, 4096, k, DType::F32, {.kernel = MatmulKernel::Blocked}).n_splits, 1u);
    }
    // lm_head of BLOOM-560m on lavapipe: pieces of W rows under 128 MiB.
    MatmulDevice lavapipe = limited;
    lavapipe.cpu = true;
    lavapipe.limits.storage_buffer_range = 128ull << 20;
    const auto lm_head = plan_matmul(lavapipe, 1, 250880, 1024, DType::F16);
    EXPECT_LE(std::uint64_t{lm_head.cols_per_piece} * 1024 * 2, 128ull << 20);
    EXPECT_GE(lm_head.cols_per_piece * 4ull, 250880u);
}

// Quantized weights' kernels, slices and pieces (moved from test_matmul_quant.cpp).
TEST(MatmulQuantPlans, KernelsSlicesAndPiecesFollowTheLimits) {
    const ComputeLimits gpu_limits{.shared_memory = 49152,
                                   .workgroup_invocations = 1024,
                                   .workgroup_size = {1024, 1024, 64},
                                   .workgroup_count = {65535, 65535, 65535},
                                   .storage_buffer_range = 1ull << 32,
                                   .storage_offset_alignment = 16,
                                   .storage_buffers = 8,
                                   .subgroup_size = 32,
                                   .subgroup_ops = true,
                                   .subgroup_size_control = true};
    const MatmulDevice gpu{.limits = gpu_limits};
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        EXPECT_EQ(plan_matmul(gpu, 1, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::RowDot);
        EXPECT_EQ(plan_matmul(gpu, 4, 4096, 1024, DType::F16, {}, f).block_m, 4u);
        EXPECT_EQ(plan_matmul(gpu, 5, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::Blocked);
        MatmulDevice no_subgroups = gpu;
        no_subgroups.limits.subgroup_ops = false;
        EXPECT_EQ(plan_matmul(no_subgroups, 1, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::Blocked);
        MatmulDevice no_size_control = gpu;
        no_size_control.limits.subgroup_size_control = false;
        EXPECT_EQ(plan_matmul(no_size_control, 1, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::Blocked);
        MatmulDevice cpu = gpu;
        cpu.cpu = true;
        cpu.limits.subgroup_size = 8;
        const auto cpu_decode = plan_matmul(cpu, 1, 4096, 1024, DType::F16, {}, f);
        EXPECT_EQ(cpu_decode.kernel, MatmulKernel::Blocked);
        EXPECT_EQ(cpu_decode.block_m, 1u);
        EXPECT_EQ(cpu_decode.blocks_per_step, 4u);
        EXPECT_EQ(plan_matmul(cpu, 1, 64, 96, DType::F16, {}, f).blocks_per_step, 1u);
        EXPECT_EQ(plan_matmul(cpu, 1, 64, 1056, DType::F16, {}, f).blocks_per_step, 1u);
        EXPECT_EQ(plan_matmul(cpu, 1, 64, 64, DType::F16, {}, f).blocks_per_step, 2u);
        EXPECT_EQ(plan_matmul(cpu, 2, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::Blocked);
        EXPECT_THROW((void)plan_matmul(cpu, 1, 64, 64, DType::F16, {.kernel = MatmulKernel::Gemv}, f), Error);

        // A loop limit like llvmpipe's: every plan keeps each invocation under half of it.
        MatmulDevice limited = cpu;
        limited.limits.max_loop_iterations = 65535;
        for (std::uint32_t k : {16384u, 1u << 20, 1u << 24}) {
            for (MatmulKernel kernel : {MatmulKernel::RowDot, MatmulKernel::Blocked}) {
                for (std::uint32_t m : {1u, 300u}) {
                    const auto p = plan_matmul(limited, m, 4096, k, DType::F32, {.kernel = kernel}, f);
                    EXPECT_LE(p.loop_iterations, 65535u / 2) << p.describe();
                    EXPECT_GE(std::uint64_t{p.k_split} * p.n_splits, k);
                    EXPECT_EQ(p.k_split % 32, 0u);
                }
            }
        }
        // lm_head of BLOOM-560m on lavapipe: pieces of W rows under 128 MiB (245 MiB of q8_0
        // values; q4_0's 122.5 MiB fit one binding).
        MatmulDevice lavapipe = limited;
        lavapipe.limits.storage_buffer_range = 128ull << 20;
        const auto lm_head = plan_matmul(lavapipe, 1, 250880, 1024, DType::F16, {}, f);
        EXPECT_LE(std::uint64_t{lm_head.cols_per_piece} * quant_row_bytes(f, 1024), 128ull << 20);
        if (f == QuantFormat::Q8_0) {
            EXPECT_LT(lm_head.cols_per_piece, 250880u);
        }
    }
}

class MatmulPlanRecording : public VulkanTest {};

void expect_refused(CommandList& list, const std::function<void()>& action, const std::string& needle) {
    const std::string message = error_message(action);
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(list.op_count(), 0u);
}

TEST_F(MatmulPlanRecording, ArgsThatDoNotMatchThePlanAreRefused) {
    constexpr std::uint32_t m = 2, n = 96, k = 64;
    const DeviceTensor x = upload_tensor(ctx(), random_uniform(m * k, 1), DType::F32, "X");
    const DeviceTensor w = upload_tensor(ctx(), random_uniform(n * k, 2), DType::F32, "W");
    const DeviceTensor y = nan_tensor(ctx(), m * n, DType::F32, "Y");
    const DeviceTensor gamma = upload_tensor(ctx(), random_uniform(k, 3), DType::F32, "LayerNorm weight");
    const DeviceTensor cache = nan_tensor(ctx(), 4 * 32, DType::F32, "cache");
    const std::uint32_t rows[] = {0, 1};
    const DeviceTensor slots = upload_words(ctx(), rows, "slots");
    const MatmulDevice d = matmul_device(ctx());
    const MatmulArgs args{.x = x.range(), .w = w.range(), .y = y.range(), .m = m, .n = n, .k = k};
    const MatmulPlan p = plan_matmul(d, m, n, k, DType::F32);
    auto list = ctx().command_list();
    const auto refused = [&](const MatmulPlan& plan, const MatmulArgs& a, const std::string& needle) {
        expect_refused(
            *list, [&] { record_matmul(ctx(), *list, plan, a); }, needle);
    };
    for (const auto& [field, value] : {std::pair{&MatmulArgs::m, 1u}, {&MatmulArgs::n, 95u}, {&MatmulArgs::k, 32u}}) {
        MatmulArgs other = args;
        other.*field = value;
        refused(p, other, "differ from the plan's");
    }
    MatmulArgs f16 = args;
    f16.weight_dtype = DType::F16;
    refused(p, f16, "differ from the plan's");
    MatmulArgs q8 = args;
    q8.quant = QuantFormat::Q8_0;
    refused(p, q8, "differ from the plan's");
    refused(MatmulPlan{}, args, "differ from the plan's");  // not made by plan_matmul

    // A scatter the plan was not asked for.
    MatmulArgs scatter = args;
    scatter.y = BufferRange{.buffer = &y.buffer(), .offset = 0, .size = m * 32 * 4};
    scatter.scatter = QkvScatter{.k_cache = cache.range(),
                                 .v_cache = cache.range(),
                                 .slots = slots.range(),
                                 .cache_dtype = DType::F32,
                                 .head_dim = 32,
                                 .q_heads = 1,
                                 .kv_heads = 1};
    refused(p, scatter, "the plan has no scatter");
    const MatmulPlan with_scatter = plan_matmul(d, m, n, k, DType::F32, {.scatter = true});
    if (with_scatter.scatter) {
        refused(with_scatter, args, "MatmulArgs::scatter is not set");
        EXPECT_NO_THROW(record_matmul(ctx(), *list, with_scatter, scatter));
        EXPECT_GT(list->op_count(), 0u);
        list = ctx().command_list();
    }

    // A LayerNorm the plan does not fuse, and one it fuses that args lack.
    MatmulArgs normed = args;
    normed.x_norm = XLayerNorm{.weight = gamma.range()};
    refused(p, normed, "needs a plan that grants it");
    if (ctx().limits().subgroup_ops && ctx().limits().subgroup_size_control) {  // the row-dot kernel runs
        const MatmulPlan with_norm =
            plan_matmul(d, m, n, k, DType::F32, {.kernel = MatmulKernel::RowDot, .x_norm = true});
        ASSERT_TRUE(with_norm.x_norm) << with_norm.describe();
        refused(with_norm, args, "MatmulArgs::x_norm is not set");
    }

    // Scratch for the plan's K slices: none, or too little.
    const MatmulPlan split = plan_matmul(d, m, n, k, DType::F32, {.kernel = MatmulKernel::Blocked, .force_splits = 2});
    ASSERT_GT(split.scratch_bytes, 0u) << split.describe();
    refused(split, args, "needs a scratch range of " + std::to_string(split.scratch_bytes));
    const Buffer scratch = ctx().create_buffer(split.scratch_bytes, MemoryKind::Device, "scratch");
    MatmulArgs short_scratch = args;
    short_scratch.scratch = BufferRange{.buffer = &scratch, .offset = 0, .size = split.scratch_bytes - 4};
    refused(split, short_scratch, "needs a scratch range of");
    short_scratch.scratch = whole(scratch);
    EXPECT_NO_THROW(record_matmul(ctx(), *list, split, short_scratch));
    EXPECT_EQ(list->op_count(), 2u) << "the slices and the reduce pass";
}

TEST(MatmulPlanForcedLimits, APlanForAnotherDeviceIsRefused) {
    // A plan whose kernel binds 9 storage buffers, recorded on a device that allows 4.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=4")));
    const MatmulPlan p = plan_matmul(device(16, true), 1, 96, 64, DType::F32, {.scatter = true, .x_norm = true});
    ASSERT_TRUE(p.scatter && p.x_norm) << p.describe();
    const DeviceTensor x = upload_tensor(ctx, random_uniform(64, 1), DType::F32, "X");
    const DeviceTensor w = upload_tensor(ctx, random_uniform(96 * 64, 2), DType::F32, "W");
    const DeviceTensor q = nan_tensor(ctx, 32, DType::F32, "Q");
    const DeviceTensor gamma = upload_tensor(ctx, random_uniform(64, 3), DType::F32, "LayerNorm weight");
    const DeviceTensor cache = nan_tensor(ctx, 4 * 32, DType::F32, "cache");
    const std::uint32_t rows[] = {2};
    const DeviceTensor slots = upload_words(ctx, rows, "slots");
    auto list = ctx.command_list();
    const MatmulArgs args{.x = x.range(),
                          .w = w.range(),
                          .y = q.range(),
                          .m = 1,
                          .n = 96,
                          .k = 64,
                          .scatter = QkvScatter{.k_cache = cache.range(),
                                                .v_cache = cache.range(),
                                                .slots = slots.range(),
                                                .cache_dtype = DType::F32,
                                                .head_dim = 32,
                                                .q_heads = 1,
                                                .kv_heads = 1},
                          .x_norm = XLayerNorm{.weight = gamma.range()}};
    expect_refused(
        *list, [&] { record_matmul(ctx, *list, p, args); },
        "needs 9 storage buffers per shader stage; the device allows 4");
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
