// Tiled ALiBi attention against the double-precision CPU reference at every head size and
// storage, through each kernel (tiled, rows) over a subset of the shape grid, the split-KV
// path and long key ranges, with outputs poisoned before every run (attention_cases.hpp).

#include "tests/ops/attention_cases.hpp"

#include <cstdint>
#include <vector>

namespace vkf::test {
namespace {

// Head sizes off the tuned table: 4n + 2 (a padded last quad: 2, 6, 250), pairs that no row of
// 8 lanes splits evenly (40, 72, 120, 200, 250), multiples of 16 between the tuned ones (48,
// 112: MPT-30B, 160).
const std::uint32_t kOtherHeadDims[] = {2, 6, 40, 48, 72, 112, 120, 160, 200, 250};

// Every tuned head size meets every storage and every mask/ALiBi mode, each mode in a different
// storage per size (the modes rotate through the storages from one size to the next). The full
// cross product, EveryHeadDimStorageAndMode, is in the `full` label: on Mesa 22.3 each
// (size, storage, mode) is its own cold pipeline, ~200 s of CI's first leg for 3x the runs.
void run_head_dim_cases(Context& ctx, std::uint32_t d, const Storage& causal, const Storage& bidir,
                        const Storage& unbiased, std::uint64_t& seed) {
    run_case(ctx, in(causal, Case{2, 33, 70, 6, 3, d, MaskMode::Causal, AlibiMode::Causal, causal.dtype}), seed++);
    run_case(ctx, in(bidir, Case{1, 70, 33, 4, 1, d, MaskMode::None, AlibiMode::Symmetric, bidir.dtype}), seed++);
    run_case(ctx, in(unbiased, Case{3, 5, 129, 3, 3, d, MaskMode::Causal, AlibiMode::Off, unbiased.dtype, true, true}),
             seed++);
}

TEST_F(Attention_, EveryHeadDimMeetsEveryStorageAndMode) {
    std::uint64_t seed = 2000;
    for (std::size_t i = 0; i < std::size(kTunedHeadDims); ++i) {
        run_head_dim_cases(ctx(), kTunedHeadDims[i], kStorages[i % 3], kStorages[(i + 1) % 3], kStorages[(i + 2) % 3],
                           seed);
        if (HasFatalFailure())
            return;
    }
}

TEST_F(Attention_, EveryHeadDimStorageAndMode) {
    std::uint64_t seed = 2000;
    for (std::uint32_t d : kTunedHeadDims) {
        for (const Storage& st : kStorages) {
            run_head_dim_cases(ctx(), d, st, st, st, seed);
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

// Split-KV decoding: three shapes (GQA at head size 128, MHA with a slope table at 80, MQA at
// 256), each shape in one storage, the storages rotating over the shapes so that every storage
// is split; every shape in every storage (`every_storage`) is SplitKvDecodeInEveryStorage,
// label full: on Mesa 22.3 each (shape, storage) is a cold pipeline pair, ~30 s of CI's first leg.
void run_split_kv_cases(Context& ctx, bool every_storage, std::uint64_t& seed) {
    const Case shapes[] = {{2, 3, 1000, 12, 4, 128, MaskMode::Causal, AlibiMode::Causal, DType::F32, false, true, 5},
                           {1, 7, 257, 20, 20, 80, MaskMode::None, AlibiMode::Symmetric, DType::F32, true, false, 3},
                           {3, 1, 65, 3, 1, 256, MaskMode::Causal, AlibiMode::Causal, DType::F32, false, true, 4}};
    for (std::size_t i = 0; i < std::size(shapes); ++i) {
        for (std::size_t k = 0; k < std::size(kStorages); ++k) {
            if (every_storage || k == i % std::size(kStorages)) {
                run_case(ctx, in(kStorages[k], shapes[i]), seed++);
            }
        }
    }
}

TEST_F(Attention_, SplitKvDecodeMatches) {
    std::uint64_t seed = 3000;
    // Chosen automatically for a single decoded row over a long cache.
    const auto plan =
        run_case(ctx(), Case{1, 1, 4096, 8, 2, 64, MaskMode::Causal, AlibiMode::Causal, DType::F32}, seed++);
    EXPECT_GT(plan.n_splits, 1u) << "decode at kv_len 4096 should use split-KV";
    run_split_kv_cases(ctx(), false, seed);
    // A session's decoding step over its fp16 cache: split automatically, as at kv_len 4096 above.
    const auto kv_plan = run_case(
        ctx(), with_f16_kv(Case{1, 1, 4096, 8, 2, 64, MaskMode::Causal, AlibiMode::Causal, DType::F32}), seed++);
    EXPECT_GT(kv_plan.n_splits, 1u);
}

TEST_F(Attention_, SplitKvDecodeInEveryStorage) {
    std::uint64_t seed = 3100;
    run_split_kv_cases(ctx(), true, seed);
}

// Quantized K/V caches through each kernel: prefill (causal, GQA) and split-KV decode with key
// counts, each quantized storage at a head size of its own (the sizes rotate) and each mode in
// one kernel; with `every_size`, each storage at every head size of 32n in both kernels and
// modes (the full label).
void run_quantized_kernel_cases(Context& ctx, bool every_size, std::uint64_t& seed) {
    const std::uint32_t dims[] = {32, 64, 96, 128, 256};
    for (std::size_t s = 0; s < std::size(kQuantStorages); ++s) {
        for (std::size_t di = 0; di < std::size(dims); ++di) {
            if (!every_size && di != s % std::size(dims)) {
                continue;
            }
            const std::uint32_t d = dims[di];
            for (const AttentionKernel kernel : {AttentionKernel::Tiled, AttentionKernel::Rows}) {
                // The quick subset: each storage runs prefill in one kernel and decode in the
                // other, which one alternating by storage, so that both kernels meet both
                // modes (cold, each case is a pipeline Mesa 22.3 compiles: CI time).
                const bool tiled_prefill = s % 2 == 0;
                if (every_size || (kernel == AttentionKernel::Tiled) == tiled_prefill) {
                    Case prefill =
                        in(kQuantStorages[s], {2, 33, 70, 6, 3, d, MaskMode::Causal, AlibiMode::Causal, DType::F32});
                    prefill.kernel = kernel;
                    run_case(ctx, prefill, seed++);
                }
                if (every_size || (kernel == AttentionKernel::Tiled) != tiled_prefill) {
                    Case decode = in(kQuantStorages[s], {2, 1, 301, 4, 1, d, MaskMode::Causal, AlibiMode::Causal,
                                                         DType::F32, s % 2 == 0, true, 3});
                    decode.kernel = kernel;
                    run_case(ctx, decode, seed++);
                }
            }
        }
    }
}

TEST_F(Attention_, QuantizedKvInEachKernelAndSplitKv) {
    std::uint64_t seed = 9000;
    run_quantized_kernel_cases(ctx(), false, seed);
}

TEST_F(Attention_, QuantizedKvInEachKernelAtEveryHeadSize) {
    std::uint64_t seed = 9100;
    run_quantized_kernel_cases(ctx(), true, seed);
}

// A head size that is not a multiple of 32 is refused for a quantized cache, naming it.
TEST_F(Attention_, QuantizedKvRefusesOtherHeadSizes) {
    const AttentionParams params{.shape = {1, 4, 8, 2, 2, 80}, .mask = MaskMode::Causal, .alibi = AlibiMode::Causal};
    for (const Storage& st : kQuantStorages) {
        try {
            const Attention op(ctx(), params, DType::F32,
                               AttentionOptions{.k_quant = st.k_quant, .v_quant = st.v_quant});
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("the head size is 80"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(Attention(ctx(), AttentionParams{.shape = {1, 4, 8, 2, 2, 64}}, DType::F16,
                           AttentionOptions{.k_quant = QuantFormat::Q8_0}),
                 Error);  // fp16 Q/O
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

// Every tuned head size in one storage each, the storages rotating from size to size (every
// storage with `every_storage`: EachKernelAtEveryTunedHeadDimAndStorage, label full, 12 more
// cold pipelines per kernel on Mesa 22.3).
std::vector<Case> tuned_head_dim_cases(bool every_storage) {
    std::vector<Case> cases;
    for (std::size_t i = 0; i < std::size(kTunedHeadDims); ++i) {
        for (std::size_t k = 0; k < std::size(kStorages); ++k) {
            if (every_storage || k == i % std::size(kStorages)) {
                const Storage& st = kStorages[k];
                cases.push_back(
                    in(st, {2, 33, 70, 6, 3, kTunedHeadDims[i], MaskMode::Causal, AlibiMode::Causal, st.dtype}));
            }
        }
    }
    return cases;
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
    const std::vector<Case> tuned = tuned_head_dim_cases(false);
    cases.insert(cases.end(), tuned.begin(), tuned.end());
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

TEST_F(Attention_, EachKernelAtEveryTunedHeadDimAndStorage) {
    std::uint64_t seed = 7500;
    for (AttentionKernel kernel : {AttentionKernel::Rows, AttentionKernel::Tiled}) {
        for (Case c : tuned_head_dim_cases(true)) {
            c.kernel = kernel;
            run_case(ctx(), c, seed += 10);
            if (HasFatalFailure())
                return;
        }
    }
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

}  // namespace
}  // namespace vkf::test
