// The cooperative-matrix matmul (MatmulKernel::CoopMat, VK_NV_cooperative_matrix;
// host/ops/matmul_coopmat.cpp, shaders/matmul_coopmat.comp). Its plans over made-up devices
// that have the extension's shapes run everywhere: chosen when forced or under VKF_LIMITS
// coopmat (never by default), tiles that fit, split K and pieces, and a clear refusal naming
// what is missing when forced where it cannot run. The numerical tests run where the device
// has cooperative matrices (NVIDIA; no driver here has them: they skip on lavapipe and run
// first in scripts/gpu_proof.sh): odd and prime shapes, k up to 4096, every epilogue, split K
// and unaligned tensors against the float64 reference, within the fp16 bound of
// test_matmul_f16 (X rounded to fp16 once, products exact, fp32 sums), outputs poisoned
// before every run. On lavapipe the kernel's EMULATE variant (VKF_LIMITS coopmat_emulated)
// runs a quick set here and the odd-shape grid (k up to 1024) under the label full: all of
// the kernel but the matrix instructions themselves.

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"
#include "host/reference/ops.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/ops/matmul_quant_cases.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <functional>
#include <optional>

namespace vkf::test {
namespace {

void expect_contains(const std::string& message, const std::string& needle) {
    EXPECT_NE(message.find(needle), std::string::npos) << message;
}

// An H100-like device (Vulkan's NVIDIA limits): subgroups of 32, 48 KiB of shared memory, the
// fp16 x fp16 -> fp32 shapes NVIDIA's driver lists, and `coopmat` VKF_LIMITS' switch.
MatmulDevice nvidia(std::vector<CoopMatShape> shapes = {{16, 8, 16}, {16, 8, 8}, {16, 16, 16}}, bool prefer = false) {
    ComputeLimits l;
    l.shared_memory = 49152;
    l.workgroup_invocations = 1024;
    l.workgroup_size = {1024, 1024, 64};
    l.workgroup_count = {2147483647, 65535, 65535};
    l.push_constants = 256;
    l.storage_buffer_range = std::uint64_t{1} << 32;
    l.storage_offset_alignment = 16;
    l.storage_buffers = 1048576;
    l.subgroup_size = 32;
    l.subgroup_ops = true;
    l.subgroup_size_control = true;
    l.fp16_storage = true;
    l.fp16_arithmetic = true;
    l.int64 = true;
    l.coopmat_shapes = std::move(shapes);
    l.prefer_coopmat = prefer;
    return MatmulDevice{.limits = l, .cpu = false};
}

const MatmulOptions kForced{.kernel = MatmulKernel::CoopMat};

// What every cooperative-matrix plan must hold on `d`.
void expect_sane(const MatmulPlan& p, const MatmulDevice& d, std::uint32_t k) {
    SCOPED_TRACE(p.describe());
    const auto& c = p.coopmat;
    EXPECT_EQ(p.kernel, MatmulKernel::CoopMat);
    EXPECT_EQ(p.subgroup_size, d.limits.subgroup_size);
    EXPECT_EQ(p.workgroup_size, c.subgroups_m * c.subgroups_n * p.subgroup_size);
    EXPECT_EQ(p.tile_m, c.subgroups_m * c.frags_m * c.shape.m);
    EXPECT_EQ(p.tile_n, c.subgroups_n * c.frags_n * c.shape.n);
    EXPECT_EQ(p.tile_k % c.shape.k, 0u);
    EXPECT_LE(p.shared_bytes, d.limits.shared_memory);
    EXPECT_GT(p.shared_bytes, 0u);
    EXPECT_LE(p.workgroup_size, d.limits.workgroup_invocations);
    EXPECT_EQ(p.k_split % p.tile_k, 0u);
    EXPECT_GE(std::uint64_t{p.k_split} * p.n_splits, k);
    EXPECT_LT(std::uint64_t{p.k_split} * (p.n_splits - 1), k);
    EXPECT_FALSE(p.scatter);
    EXPECT_FALSE(p.x_norm);
    EXPECT_FALSE(p.separate_epilogue);
    EXPECT_NE(p.describe().find("coopmat"), std::string::npos);
}

TEST(MatmulCoopMatPlan, ForcedTakesTheSixteenCubedShapeAndTilesThatFit) {
    const MatmulDevice d = nvidia();
    for (const std::uint32_t m : {1u, 5u, 16u, 17u, 64u, 512u, 4096u}) {
        for (const std::uint32_t k : {1u, 31u, 1024u, 4096u}) {
            const MatmulPlan p = plan_matmul(d, m, 3072, k, DType::F16, kForced);
            expect_sane(p, d, k);
            EXPECT_EQ(p.coopmat.shape, (CoopMatShape{16, 16, 16}));
            // Not much taller than the input: 16 rows up to 32, 64 from 33 on.
            EXPECT_EQ(p.tile_m, m <= 32 ? 16u : 64u) << p.describe();
        }
    }
    // Only 16 x 8 shapes: the first aligned one.
    const MatmulPlan p = plan_matmul(nvidia({{16, 8, 16}, {16, 8, 8}}), 256, 1024, 1024, DType::F16, kForced);
    expect_sane(p, nvidia({{16, 8, 16}}), 1024);
    EXPECT_EQ(p.coopmat.shape, (CoopMatShape{16, 8, 16}));
    // Little shared memory: smaller tiles, then a refusal.
    MatmulDevice small = nvidia();
    small.limits.shared_memory = 8192;
    expect_sane(plan_matmul(small, 512, 1024, 1024, DType::F16, kForced), small, 1024);
    small.limits.shared_memory = 1024;
    expect_contains(error_message([&] { plan_matmul(small, 512, 1024, 1024, DType::F16, kForced); }),
                    "the cooperative-matrix kernel fits no tile on this device (1024 bytes of shared memory");
}

TEST(MatmulCoopMatPlan, SplitsKAndCutsPiecesAsTheOtherKernels) {
    const MatmulDevice d = nvidia();
    // Forced slices, whole K steps each.
    MatmulPlan p = plan_matmul(d, 100, 96, 1000, DType::F16, {.kernel = MatmulKernel::CoopMat, .force_splits = 3});
    expect_sane(p, d, 1000);
    EXPECT_EQ(p.n_splits, 3u);
    EXPECT_EQ(p.scratch_bytes, 4ull * 3 * 100 * 96);
    // A small output over a long K: split for parallelism.
    p = plan_matmul(d, 64, 64, 16384, DType::F16, kForced);
    expect_sane(p, d, 16384);
    EXPECT_GT(p.n_splits, 1u);
    // Bindings smaller than W: pieces of its rows.
    MatmulDevice narrow = nvidia();
    narrow.limits.storage_buffer_range = 1 << 20;
    p = plan_matmul(narrow, 512, 4096, 1024, DType::F16, kForced);
    expect_sane(p, narrow, 1024);
    EXPECT_LE(std::uint64_t{p.cols_per_piece} * 1024 * 2, narrow.limits.storage_buffer_range);
    EXPECT_LT(p.cols_per_piece, 4096u);
    // The fused QKV scatter as the other dense kernels (a model's step buffers need the same
    // answer at every m); not with too few storage buffers.
    const MatmulOptions scatter{.kernel = MatmulKernel::CoopMat, .scatter = true};
    EXPECT_TRUE(plan_matmul(d, 64, 3 * 256, 256, DType::F16, scatter).scatter);
    MatmulDevice six = nvidia();
    six.limits.storage_buffers = 6;
    EXPECT_FALSE(plan_matmul(six, 64, 3 * 256, 256, DType::F16, scatter).scatter);
}

TEST(MatmulCoopMatPlan, AutoTakesItOnlyUnderTheSwitchAndWhereItFits) {
    // Never by default, even where the device has it.
    for (const std::uint32_t m : {1u, 16u, 512u}) {
        EXPECT_NE(plan_matmul(nvidia(), m, 1024, 1024, DType::F16).kernel, MatmulKernel::CoopMat);
    }
    const MatmulDevice on = nvidia({{16, 16, 16}}, true);
    expect_sane(plan_matmul(on, kCoopMatMinRows, 1024, 1024, DType::F16), on, 1024);
    expect_sane(plan_matmul(on, 512, 1024, 1024, DType::F16), on, 1024);
    // Decoding rows, fp32 weights, fp32 arithmetic asked for, quantized weights, a device
    // without the shapes: the other kernels, silently (Auto is a choice, not a demand).
    EXPECT_EQ(plan_matmul(on, kCoopMatMinRows - 1, 1024, 1024, DType::F16).kernel, MatmulKernel::Tiled);
    EXPECT_EQ(plan_matmul(on, 1, 1024, 1024, DType::F16).kernel, MatmulKernel::Gemv);
    EXPECT_EQ(plan_matmul(on, 512, 1024, 1024, DType::F32).kernel, MatmulKernel::Tiled);
    EXPECT_EQ(plan_matmul(on, 512, 1024, 1024, DType::F16, {.arithmetic = MatmulArithmetic::F32}).kernel,
              MatmulKernel::Tiled);
    EXPECT_NE(plan_matmul(on, 512, 1024, 1024, DType::F16, {}, QuantFormat::Q8_0).kernel, MatmulKernel::CoopMat);
    EXPECT_EQ(plan_matmul(nvidia({}, true), 512, 1024, 1024, DType::F16).kernel, MatmulKernel::Tiled);
}

TEST(MatmulCoopMatPlan, ForcedWhereItCannotRunIsRefusedSayingWhy) {
    const auto refusal = [](const MatmulDevice& d, DType dtype, MatmulOptions options = kForced,
                            QuantFormat quant = QuantFormat::None) {
        return error_message([&] { plan_matmul(d, 64, 64, 64, dtype, options, quant); });
    };
    expect_contains(refusal(nvidia({}), DType::F16),
                    "the cooperative-matrix kernel (MatmulKernel::CoopMat) needs a device with cooperative matrices");
    expect_contains(refusal(nvidia({}), DType::F16), "VK_NV_cooperative_matrix");
    expect_contains(refusal(nvidia(), DType::F32), "reads fp16 weights only, not f32");
    expect_contains(refusal(nvidia(), DType::F16, kForced, QuantFormat::Q4_0),
                    "the coopmat kernel does not read q4_0 weights");
    expect_contains(refusal(nvidia({{8, 8, 4}, {4, 4, 4}}), DType::F16), "multiples of 8");
    MatmulDevice no_size_control = nvidia();
    no_size_control.limits.subgroup_size_control = false;
    expect_contains(refusal(no_size_control, DType::F16), "full subgroups of a required size");
    MatmulDevice four_buffers = nvidia();
    four_buffers.limits.storage_buffers = 4;
    expect_contains(refusal(four_buffers, DType::F16), "binds 5 storage buffers");
    expect_contains(
        refusal(nvidia(), DType::F16, {.kernel = MatmulKernel::CoopMat, .arithmetic = MatmulArithmetic::F32}),
        "MatmulArithmetic::F32 asks for fp32 products");
}

// One case on the cooperative-matrix kernel, forced, against the reference (run_dense: Y and
// the scratch poisoned, every output within the fp16-arithmetic bound).
void run_case(Context& cx, DenseCase c, std::uint64_t seed) {
    c.kernel = MatmulKernel::CoopMat;
    run_dense(cx, c, seed);
}

// Odd and prime m, n and k (k up to `max_k`), every epilogue, split K, unaligned tensors.
void odd_shape_grid(Context& cx, std::uint32_t max_k) {
    const std::uint32_t ms[] = {1, 3, 16, 17, 61, 64, 127, 257};
    const std::uint32_t ns[] = {1, 5, 16, 31, 97, 128, 263};
    const std::uint32_t ks[] = {1, 7, 16, 33, 127, 509, 1024, 4093, 4096};
    std::uint64_t seed = 2900;
    std::uint32_t step = 0;
    for (const std::uint32_t m : ms) {
        for (std::uint32_t i = 0; i < 3; ++i, ++step) {
            const std::uint32_t k = ks[(step * 7 + 3 * i) % std::size(ks)];
            run_case(cx,
                     DenseCase{.m = m,
                               .n = ns[(step * 5 + i) % std::size(ns)],
                               .k = std::min(k, max_k),
                               .bias = step % 3 != 2,
                               .residual = step % 4 == 1,
                               .activation = activation_of(step / 2),
                               .splits = step % 5 == 4 ? 3u : 0u,
                               .pad = step % 6 == 3 ? 3u : 0u},
                     seed += 10);
            if (::testing::Test::HasFatalFailure())
                return;
        }
    }
}

// The device's own cooperative matrices (NVIDIA): skipped elsewhere.
class MatmulCoopMat : public VulkanTest {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (ctx().limits().coopmat_shapes.empty() || ctx().limits().coopmat_emulated) {
            GTEST_SKIP() << "the device (" << ctx().device_info().name
                         << ") has no cooperative matrices of fp16 inputs and fp32 accumulators "
                            "(VK_NV_cooperative_matrix: NVIDIA drivers only; scripts/gpu_proof.sh runs this suite)";
        }
    }
};

TEST_F(MatmulCoopMat, OddAndPrimeShapesWithEveryEpilogue) {
    odd_shape_grid(ctx(), 4096);
}

TEST_F(MatmulCoopMat, LongRowsSplitKAndLargeActivations) {
    run_case(ctx(),
             {.m = 300, .n = 1031, .k = 4096, .bias = true, .residual = true, .activation = Activation::GeluTanh},
             2990);
    run_case(ctx(), {.m = 67, .n = 129, .k = 4093, .splits = 5, .pad = 1}, 2991);
    // |x| up to 128 over k = 4096: fp32 accumulators, no overflow.
    run_case(ctx(), {.m = 33, .n = 70, .k = 4096, .bias = true, .x_range = 128.0f}, 2992);
}

// The EMULATE variant (VKF_LIMITS coopmat_emulated) where the device has no cooperative
// matrices (lavapipe): the kernel's tiles, offsets, the loads' strides and layouts as the
// real loads are given them, the staging, split K and the epilogue, against the reference.
// A non-square shape (16 x 8 x 16, as NVIDIA lists) catches M/N mix-ups a square one hides.
class MatmulCoopMatEmulated : public ::testing::Test {
protected:
    static void with_emulation(const char* shape, const std::function<void(Context&)>& body) {
        MessageSink sink;
        Context cx(test_options(sink, LimitOverrides::parse(std::string("coopmat_emulated=") + shape)));
        if (!cx.limits().coopmat_emulated) {
            GTEST_SKIP() << "no emulation here: the device has cooperative matrices, or lacks fp16 arithmetic";
        }
        if (!cx.limits().subgroup_size_control) {
            GTEST_SKIP() << "the device cannot require full subgroups";
        }
        body(cx);
    }
};

TEST_F(MatmulCoopMatEmulated, Quick) {
    with_emulation("16x8x16", [](Context& cx) {
        // 1 x 2 subgroups of 1 x 2 accumulators, unaligned (no fp16 pairs), every epilogue.
        run_case(
            cx,
            {.m = 29, .n = 37, .k = 45, .bias = true, .residual = true, .activation = Activation::GeluTanh, .pad = 3},
            3000);
        // 2 x 2 subgroups of 2 x 4, split K over steps and a ragged last step.
        run_case(cx, {.m = 70, .n = 97, .k = 100, .activation = Activation::GeluErf, .splits = 3}, 3001);
    });
}

TEST_F(MatmulCoopMatEmulated, OddShapeGridFull) {
    with_emulation("16x8x16", [](Context& cx) { odd_shape_grid(cx, 1024); });
    with_emulation("16x16x16", [](Context& cx) { run_case(cx, {.m = 64, .n = 65, .k = 64, .bias = true}, 3002); });
}

// Where the device lacks it (lavapipe), forcing it throws before anything is recorded.
TEST_F(VulkanTest, ForcedCoopMatOnADeviceWithoutItThrows) {
    if (!ctx().limits().coopmat_shapes.empty()) {
        GTEST_SKIP() << "the device has cooperative matrices";
    }
    expect_contains(error_message([] {
                        plan_matmul(matmul_device(ctx()), 64, 64, 64, DType::F16, {.kernel = MatmulKernel::CoopMat});
                    }),
                    "VK_NV_cooperative_matrix");
    // And the device is created as before: no cooperative matrices enabled.
    EXPECT_FALSE(ctx().device().enabled().cooperative_matrix);
}

}  // namespace
}  // namespace vkf::test
