// The attention planner's choices (tiles within the limits for every even head size, the
// rows kernel on CPU devices, subgroup loads, split-KV targets) and the clear errors that bad
// shapes, ranges and storage types get.

#include "tests/ops/attention_cases.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace vkf::test {
namespace {

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
