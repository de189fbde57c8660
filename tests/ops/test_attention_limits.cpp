// Attention under forced smaller device limits (VKF_LIMITS-style overrides: phone and tiny
// shared memory, no subgroup operations, no loop unrolling, fewer compute units): the plans
// stay within them and the results match the CPU reference (attention_cases.hpp).

#include "tests/ops/attention_cases.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

namespace vkf::test {
namespace {

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

// Quantized K/V caches under forced limits: the phone's and tiny tiles, no subgroup loads,
// the 4-storage-buffer variants (PACKED_TABLES), no loop unrolling; prefill and split-KV
// decoding, the kernels and the quantized storages rotating over the limits, one case each.
TEST(AttentionForcedLimits, QuantizedKvUnderForcedLimits) {
    const char* specs[] = {"phone", "shared_memory=6144,workgroup_invocations=32,workgroup_count=3", "no_subgroup_ops",
                           "storage_buffers=4", "no_unroll"};
    std::uint64_t seed = 4800;
    std::size_t n = 0;
    for (const char* spec : specs) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        {
            // One case a spec (cold, each is a pipeline Mesa 22.3 compiles: CI time): prefill
            // and decoding alternate, and the kernel every second spec.
            const AttentionKernel kernel = n % 4 < 2 ? AttentionKernel::Tiled : AttentionKernel::Rows;
            const bool prefill = n % 2 == 0;
            const Storage& st = kQuantStorages[n++ % std::size(kQuantStorages)];
            Case c = prefill ? in(st, {2, 65, 127, 6, 2, 64, MaskMode::Causal, AlibiMode::Causal, DType::F32})
                             : in(st, {1, 1, 700, 4, 4, 128, MaskMode::Causal, AlibiMode::Symmetric, DType::F32, false,
                                       true, 3});
            c.kernel = kernel;
            const auto plan = run_case(ctx, c, seed++);
            EXPECT_LE(plan.shared_bytes, ctx.limits().shared_memory);
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

}  // namespace
}  // namespace vkf::test
