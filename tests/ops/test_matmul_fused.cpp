// The matmul's fused work against the double-precision reference.
// QKV scatter (MatmulArgs::scatter, the SCATTER kernels): Q, K and V of m new tokens written
// by the matmul's epilogue where attention reads them, K and V at the cache rows the slots
// name (a random choice of rows, in random order), against the reference matmul scattered
// on the host. Every kernel (dense and block-quantized), split-K (the reduce pass
// scatters), BLOOM's interleaved [n_head, 3, head_dim] columns and [q | k | v] blocks with
// grouped K/V heads, fp32 and fp16 caches, and the clamp. The caches start random: rows no
// slot names must come back bit for bit, and Q is poisoned. The recorded list is submitted
// again with new slots (one of them past the cache: a padding row, which writes nothing).
// LayerNorm of X (MatmulArgs::x_norm, the LN_X row-dot kernels): against the reference
// LayerNorm followed by the reference matmul, over odd and aligned k (element, 8- and
// 16-element loads), with and without the norm's bias, split-K, and refused elsewhere.

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"
#include "host/reference/ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/ops/matmul_quant_cases.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <tuple>

namespace vkf::test {
namespace {

struct Case {
    std::uint32_t m = 1;
    std::uint32_t head_dim = 32, q_heads = 2, kv_heads = 2;
    bool interleaved = true;
    DType weights = DType::F16;  // F32, F16, or the bias type of quantized weights
    QuantFormat quant = QuantFormat::None;
    DType cache = DType::F16;
    MatmulOptions options{};
    std::optional<float> clamp;
    bool bias = true;
};

std::string name(const Case& c) {
    return "m" + std::to_string(c.m) + " D" + std::to_string(c.head_dim) + " heads " + std::to_string(c.q_heads) + "/" +
           std::to_string(c.kv_heads) + (c.interleaved ? " interleaved" : " blocks") + " " +
           (c.quant != QuantFormat::None ? to_string(c.quant) : to_string(c.weights)) + " cache " + to_string(c.cache) +
           " kernel=" + to_string(c.options.kernel) +
           (c.options.force_splits ? " splits" + std::to_string(c.options.force_splits) : "") +
           (c.clamp ? " clamp" : "");
}

class MatmulScatter : public VulkanTest {};

// The storage buffers per stage the SCATTER kernels bind (interface of the plan's answer).
std::uint32_t scatter_bindings(QuantFormat quant) {
    return quant == QuantFormat::None ? 7 : 8;
}

void expect_scatter_refused(Context& ctx, CommandList& list, const MatmulArgs& args) {
    const std::string message = error_message([&] { record_matmul(ctx, list, args); });
    const std::string needle =
        "matmul with a QKV scatter (MatmulArgs::scatter) needs " + std::to_string(scatter_bindings(args.quant)) +
        " storage buffers per shader stage; the device allows " + std::to_string(ctx.limits().storage_buffers);
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(list.op_count(), 0u);
}

// `m` distinct rows of a cache of `capacity` rows, in random order.
std::vector<std::uint32_t> random_slots(std::uint32_t m, std::uint32_t capacity, std::uint64_t seed) {
    std::vector<std::uint32_t> rows(capacity);
    std::iota(rows.begin(), rows.end(), 0u);
    std::mt19937_64 engine(seed);
    std::shuffle(rows.begin(), rows.end(), engine);
    rows.resize(m);
    return rows;
}

// The reference's Q, and its K and V rows written over `k_ref` and `v_ref` at the slots
// (none for a slot past the cache).
void scatter_reference(const Case& c, const std::vector<double>& y, const std::vector<std::uint32_t>& slots,
                       std::uint32_t capacity, std::vector<double>& q_ref, std::vector<double>& k_ref,
                       std::vector<double>& v_ref) {
    const std::uint32_t D = c.head_dim, q_cols = c.q_heads * D, kv_cols = c.kv_heads * D, n = q_cols + 2 * kv_cols;
    for (std::uint32_t row = 0; row < c.m; ++row) {
        for (std::uint32_t col = 0; col < n; ++col) {
            std::uint32_t part, head, d;
            if (c.interleaved) {
                head = col / (3 * D);
                part = col / D % 3;
                d = col % D;
            } else {
                part = col < q_cols ? 0 : col < q_cols + kv_cols ? 1 : 2;
                const std::uint32_t at = part == 0 ? col : part == 1 ? col - q_cols : col - q_cols - kv_cols;
                head = at / D;
                d = at % D;
            }
            const double value = y[std::size_t{row} * n + col];
            if (part == 0) {
                q_ref[(std::size_t{row} * c.q_heads + head) * D + d] = value;
            } else if (slots[row] < capacity) {
                (part == 1 ? k_ref : v_ref)[(std::size_t{slots[row]} * c.kv_heads + head) * D + d] = value;
            }
        }
    }
}

void run_case(Context& ctx, const Case& c, std::uint64_t seed) {
    SCOPED_TRACE(name(c));
    const std::uint32_t D = c.head_dim, k = 64;
    const std::uint32_t q_cols = c.q_heads * D, kv_cols = c.kv_heads * D, n = q_cols + 2 * kv_cols;
    constexpr std::uint32_t kCapacity = 23;
    const auto x = random_uniform(std::size_t{c.m} * k, seed, -1.0f, 1.0f);
    auto w = random_uniform(std::size_t{n} * k, seed + 1, -1.0f, 1.0f);
    const auto bias = c.bias ? random_uniform(n, seed + 2, -1.0f, 1.0f) : std::vector<float>{};

    const DeviceTensor xb = upload_tensor(ctx, x, DType::F32, "X");
    std::optional<DeviceTensor> wb, sb, bb;
    if (c.quant != QuantFormat::None) {
        const std::uint64_t row_bytes = quant_row_bytes(c.quant, k), row_scales = quant_row_scales(k);
        std::vector<std::uint8_t> values(n * row_bytes);
        std::vector<std::uint16_t> scales(n * row_scales);
        std::vector<float> scale_floats(scales.size());
        for (std::uint32_t r = 0; r < n; ++r) {
            const std::span row_values(values.data() + r * row_bytes, row_bytes);
            const std::span row_s(scales.data() + r * row_scales, row_scales);
            quantize_row(c.quant, std::span<const float>(w).subspan(std::size_t{r} * k, k), row_values, row_s);
            // The reference multiplies by exactly what the kernels decode.
            dequantize_row(c.quant, row_values, row_s, std::span(w).subspan(std::size_t{r} * k, k));
        }
        std::vector<std::uint32_t> words((values.size() + 3) / 4, 0);
        std::memcpy(words.data(), values.data(), values.size());
        wb = upload_words(ctx, words, "W values");
        std::transform(scales.begin(), scales.end(), scale_floats.begin(), half_to_float);
        sb = upload_tensor(ctx, scale_floats, DType::F16, "W scales");
    } else {
        if (c.weights == DType::F16) {
            for (float& v : w)
                v = half_to_float(float_to_half(v));
        }
        wb = upload_tensor(ctx, w, c.weights, "W");
    }
    std::vector<float> rounded_bias = bias;
    if (c.weights == DType::F16) {
        for (float& v : rounded_bias)
            v = half_to_float(float_to_half(v));
    }
    if (c.bias) {
        bb = upload_tensor(ctx, bias, c.weights, "bias");
    }
    const auto k_init = random_uniform(std::size_t{kCapacity} * kv_cols, seed + 3, -3.0f, 3.0f);
    const auto v_init = random_uniform(std::size_t{kCapacity} * kv_cols, seed + 4, -3.0f, 3.0f);
    const DeviceTensor kc = upload_tensor(ctx, k_init, c.cache, "K cache");
    const DeviceTensor vc = upload_tensor(ctx, v_init, c.cache, "V cache");
    const DeviceTensor qb = nan_tensor(ctx, std::uint64_t{c.m} * q_cols, DType::F32, "Q");
    std::vector<std::uint32_t> slots = random_slots(c.m, kCapacity, seed + 5);
    // One word in, so that the kernels find the first slot past the binding's start.
    const DeviceTensor slot_buffer = upload_words(ctx, slots, "slots", 1);

    MatmulOptions options = c.options;
    options.scatter = true;
    const MatmulPlan plan = plan_matmul(matmul_device(ctx), c.m, n, k, c.weights, options, c.quant);
    const bool fits = ctx.limits().storage_buffers >= scatter_bindings(c.quant);
    ASSERT_EQ(plan.scatter, fits) << plan.describe();
    Buffer scratch;
    if (plan.scratch_bytes > 0) {
        scratch = ctx.create_buffer(plan.scratch_bytes, MemoryKind::Device, "matmul scratch");
    }
    auto list = ctx.command_list();
    const MatmulArgs args{.x = xb.range(),
                          .w = wb->range(),
                          .bias = bb ? bb->range() : BufferRange{},
                          .y = qb.range(),
                          .scratch = scratch.valid() ? whole(scratch) : BufferRange{},
                          .m = c.m,
                          .n = n,
                          .k = k,
                          .weight_dtype = c.weights,
                          .options = c.options,
                          .quant = c.quant,
                          .scales = sb ? sb->range() : BufferRange{},
                          .scatter = QkvScatter{.k_cache = kc.range(),
                                                .v_cache = vc.range(),
                                                .slots = slot_buffer.range(),
                                                .cache_dtype = c.cache,
                                                .head_dim = D,
                                                .q_heads = c.q_heads,
                                                .kv_heads = c.kv_heads,
                                                .interleaved = c.interleaved},
                          .clamp = c.clamp};
    if (!fits) {
        // Fewer storage buffers per stage than the SCATTER kernels bind (Vulkan's minimum of 4,
        // VKF_LIMITS=spec_minimum): the plan refuses, and recording the scatter anyway fails
        // naming both counts, before anything is recorded; a caller takes the separate passes.
        expect_scatter_refused(ctx, *list, args);
        EXPECT_THROW(record_matmul(ctx, *list, plan, args), Error);
        EXPECT_EQ(list->op_count(), 0u);
        return;
    }
    record_matmul(ctx, *list, plan, args);

    std::vector<double> y = reference::matmul(x, w, rounded_bias, {}, c.m, n, k);
    if (c.clamp) {
        for (double& v : y)
            v = std::clamp<double>(v, -*c.clamp, *c.clamp);
    }
    // Two submissions of the one list: the slots are read when it runs.
    for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE("submission " + std::to_string(round + 1));
        if (round == 1) {
            slots = random_slots(c.m, kCapacity, seed + 6);
            if (c.m > 1) {
                slots.back() = 0xFFFFFFFFu;  // a padding row: Q only
            }
            ctx.upload(slot_buffer.buffer(), std::span<const std::uint32_t>(slots), slot_buffer.range().offset);
            poison(ctx, qb.buffer());
        }
        const std::vector<float> k_before = download_tensor(ctx, kc), v_before = download_tensor(ctx, vc);
        ctx.submit(*list);
        std::vector<double> q_ref(std::size_t{c.m} * q_cols);
        std::vector<double> k_ref(k_before.begin(), k_before.end()), v_ref(v_before.begin(), v_before.end());
        scatter_reference(c, y, slots, kCapacity, q_ref, k_ref, v_ref);
        // fp16 arithmetic (GPUs' default on fp16 and quantized weights; forced below): the
        // per-output bound of docs/DESIGN.md (matmul_quant_cases.hpp) at the largest magnitude,
        // relative to the largest Q: fp16's 2e-3 alone is not a bound (q8_0's row dots on a
        // GPU-planned lavapipe reached 2.3e-3).
        double tol = tolerance(DType::F32);
        if (plan.f16_arithmetic) {
            const std::vector<double> mag = magnitudes(x, w, c.m, n, k);
            double max_q = 0.0;
            for (const double v : q_ref)
                max_q = std::max(max_q, std::abs(v));
            tol = f16_products_bound(*std::max_element(mag.begin(), mag.end())) / max_q + tolerance(DType::F32);
        }
        const ErrorStats q_err = compare_to_reference(download_tensor(ctx, qb), q_ref);
        EXPECT_LT(q_err.max_rel, tol) << describe(q_err) << "; " << plan.describe();
        const std::vector<float> k_after = download_tensor(ctx, kc), v_after = download_tensor(ctx, vc);
        for (const auto& [after, ref, before] :
             {std::tuple{&k_after, &k_ref, &k_before}, {&v_after, &v_ref, &v_before}}) {
            const ErrorStats e = compare_to_reference(*after, *ref);
            EXPECT_LT(e.max_rel, std::max(tol, tolerance(c.cache))) << describe(e) << "; " << plan.describe();
            for (std::size_t i = 0; i < after->size(); ++i) {
                const auto row = static_cast<std::uint32_t>(i / kv_cols);
                if (std::find(slots.begin(), slots.end(), row) == slots.end()) {
                    ASSERT_EQ(std::memcmp(&(*after)[i], &(*before)[i], sizeof(float)), 0)
                        << "cache element " << i << " (row " << row << ") that no slot names was changed";
                }
            }
        }
    }
}

TEST_F(MatmulScatter, EveryDenseKernelAndLayout) {
    std::uint64_t seed = 100;
    for (const MatmulKernel kernel :
         {MatmulKernel::Auto, MatmulKernel::Tiled, MatmulKernel::Gemv, MatmulKernel::Blocked, MatmulKernel::RowDot}) {
        if (kernel == MatmulKernel::RowDot && !ctx().limits().subgroup_ops) {
            continue;
        }
        for (const std::uint32_t splits : {0u, 3u}) {
            for (const std::uint32_t m : {1u, 5u}) {
                const MatmulOptions options{.kernel = kernel, .force_splits = splits};
                run_case(ctx(), Case{.m = m, .options = options}, seed++);
                run_case(ctx(),
                         Case{.m = m,
                              .q_heads = 4,
                              .kv_heads = 2,
                              .interleaved = false,
                              .weights = DType::F32,
                              .cache = DType::F32,
                              .options = options,
                              .clamp = 0.75f},
                         seed++);
            }
        }
    }
}

// GEMV_F16's SCATTER variant (every decode step's QKV projection of an fp16 model on a GPU),
// forced on lavapipe: fused, and split (the reduce pass scatters). No clamp: max_rel is
// relative to the largest output, which a clamp of sums of 64 products makes small.
TEST_F(MatmulScatter, GemvInFp16Arithmetic) {
    const MatmulArithmetic f16 = MatmulArithmetic::F16;
    // Where the device has fp16 arithmetic (not under no_fp16_arithmetic) these run GEMV_F16.
    EXPECT_EQ(
        plan_matmul(matmul_device(ctx()), 1, 192, 64, DType::F16, {.kernel = MatmulKernel::Gemv, .arithmetic = f16})
            .f16_arithmetic,
        ctx().limits().fp16_arithmetic);
    run_case(ctx(), Case{.m = 1, .options = {.kernel = MatmulKernel::Gemv, .arithmetic = f16}}, 150);
    run_case(ctx(),
             Case{.m = 3,
                  .q_heads = 4,
                  .kv_heads = 2,
                  .interleaved = false,
                  .cache = DType::F32,
                  .options = {.kernel = MatmulKernel::Gemv, .force_splits = 3, .arithmetic = f16}},
             151);
}

TEST_F(MatmulScatter, QuantizedWeightsAndHeadSizes) {
    std::uint64_t seed = 200;
    for (const QuantFormat quant : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (const MatmulKernel kernel : {MatmulKernel::Auto, MatmulKernel::Blocked}) {
            for (const std::uint32_t splits : {0u, 2u}) {
                const MatmulOptions options{.kernel = kernel, .force_splits = splits};
                run_case(ctx(), Case{.m = 3, .weights = DType::F16, .quant = quant, .options = options}, seed++);
                run_case(ctx(),
                         Case{.m = 1,
                              .head_dim = 80,
                              .q_heads = 3,
                              .kv_heads = 1,
                              .interleaved = false,
                              .weights = DType::F32,
                              .quant = quant,
                              .options = options,
                              .clamp = 2.0f,
                              .bias = false},
                         seed++);
            }
        }
    }
    run_case(ctx(), Case{.m = 2, .head_dim = 128, .q_heads = 1, .kv_heads = 1}, seed++);
    // Head sizes off the attention's tuned table, both layouts and caches: 4n + 2 (an odd number
    // of fp16 words per cache row, so rows start on alternate 8-byte boundaries) and MPT-30B's 112.
    for (const std::uint32_t d : {6u, 18u, 112u}) {
        run_case(ctx(), Case{.m = 3, .head_dim = d, .q_heads = 3, .kv_heads = 3}, seed++);
        run_case(ctx(),
                 Case{.m = 2,
                      .head_dim = d,
                      .q_heads = 5,
                      .kv_heads = 1,
                      .interleaved = false,
                      .weights = DType::F32,
                      .cache = DType::F32},
                 seed++);
    }
}

void run_layernorm_case(Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k, DType dtype, bool bias,
                        std::uint32_t splits, std::uint64_t seed) {
    SCOPED_TRACE("m" + std::to_string(m) + " n" + std::to_string(n) + " k" + std::to_string(k) + " " +
                 to_string(dtype) + (bias ? " norm bias" : "") + " splits " + std::to_string(splits));
    // Rows far from zero mean, as a residual stream is.
    auto x = random_uniform(std::size_t{m} * k, seed, -2.0f, 2.0f);
    for (float& v : x)
        v += 3.0f;
    const auto rounded = [&](std::vector<float> v) {
        if (dtype == DType::F16) {
            for (float& e : v)
                e = half_to_float(float_to_half(e));
        }
        return v;
    };
    const auto w = rounded(random_uniform(std::size_t{n} * k, seed + 1, -1.0f, 1.0f));
    const auto gamma = rounded(random_uniform(k, seed + 2, 0.5f, 1.5f));
    const auto beta = bias ? rounded(random_uniform(k, seed + 3, -0.5f, 0.5f)) : std::vector<float>{};
    const auto lin_bias = rounded(random_uniform(n, seed + 4, -1.0f, 1.0f));
    constexpr float kEps = 1e-5f;

    const DeviceTensor xb = upload_tensor(ctx, x, DType::F32, "X");
    const DeviceTensor wb = upload_tensor(ctx, w, dtype, "W");
    const DeviceTensor gb = upload_tensor(ctx, gamma, dtype, "LayerNorm weight");
    std::optional<DeviceTensor> bb;
    if (bias)
        bb = upload_tensor(ctx, beta, dtype, "LayerNorm bias");
    const DeviceTensor lb = upload_tensor(ctx, lin_bias, dtype, "bias");
    const DeviceTensor yb = nan_tensor(ctx, std::uint64_t{m} * n, DType::F32, "Y");
    // Forced: the fusion is granted past kLayerNormFusionMaxK, where it would not pay.
    const MatmulOptions options{.kernel = MatmulKernel::RowDot, .force_splits = splits, .x_norm = true};
    const MatmulPlan plan = plan_matmul(matmul_device(ctx), m, n, k, dtype, options);
    ASSERT_TRUE(plan.x_norm) << plan.describe();
    Buffer scratch;
    if (plan.scratch_bytes > 0) {
        scratch = ctx.create_buffer(plan.scratch_bytes, MemoryKind::Device, "matmul scratch");
    }
    auto list = ctx.command_list();
    record_matmul(
        ctx, *list,
        MatmulArgs{.x = xb.range(),
                   .w = wb.range(),
                   .bias = lb.range(),
                   .y = yb.range(),
                   .scratch = scratch.valid() ? whole(scratch) : BufferRange{},
                   .m = m,
                   .n = n,
                   .k = k,
                   .weight_dtype = dtype,
                   .activation = Activation::GeluTanh,
                   .options = options,
                   .x_norm = XLayerNorm{.weight = gb.range(), .bias = bb ? bb->range() : BufferRange{}, .eps = kEps}});
    ctx.submit(*list);
    const std::vector<double> normed = reference::layernorm(x, gamma, beta, m, k, kEps);
    const std::vector<double> ref = reference::linear(normed, w, lin_bias, m, n, k);
    std::vector<double> act(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double v = ref[i];
        act[i] = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    }
    const ErrorStats e = compare_to_reference(download_tensor(ctx, yb), act);
    EXPECT_LT(e.max_rel, tolerance(DType::F32)) << describe(e) << "; " << plan.describe();
}

TEST_F(MatmulScatter, LayerNormFusedIntoTheRowDotKernel) {
    if (!ctx().limits().subgroup_ops) {
        GTEST_SKIP() << "the row-dot kernel needs subgroup arithmetic";
    }
    std::uint64_t seed = 300;
    for (const DType dtype : {DType::F32, DType::F16}) {
        for (const bool bias : {true, false}) {
            run_layernorm_case(ctx(), 1, 37, 64, dtype, bias, 0, seed++);
            run_layernorm_case(ctx(), 3, 70, 256, dtype, bias, 0, seed++);
            run_layernorm_case(ctx(), 1, 33, 47, dtype, bias, 0, seed++);    // element loads only
            run_layernorm_case(ctx(), 2, 19, 1024, dtype, bias, 3, seed++);  // split K
        }
    }
}

TEST_F(MatmulScatter, LayerNormFusionIsRefusedOutsideTheRowDotKernel) {
    const DeviceTensor x = nan_tensor(ctx(), 64, DType::F32, "X");
    const DeviceTensor w = nan_tensor(ctx(), 64 * 8, DType::F32, "W");
    const DeviceTensor g = nan_tensor(ctx(), 64, DType::F32, "gamma");
    const DeviceTensor y = nan_tensor(ctx(), 8, DType::F32, "Y");
    const MatmulOptions blocked{.kernel = MatmulKernel::Blocked, .x_norm = true};
    EXPECT_FALSE(plan_matmul(matmul_device(ctx()), 1, 8, 64, DType::F32, blocked).x_norm);
    auto list = ctx().command_list();
    const std::string message = error_message([&] {
        record_matmul(ctx(), *list,
                      MatmulArgs{.x = x.range(),
                                 .w = w.range(),
                                 .y = y.range(),
                                 .m = 1,
                                 .n = 8,
                                 .k = 64,
                                 .options = blocked,
                                 .x_norm = XLayerNorm{.weight = g.range()}});
    });
    EXPECT_NE(message.find("row-dot"), std::string::npos) << message;
    EXPECT_EQ(list->op_count(), 0u);
}

TEST_F(MatmulScatter, BadGeometryIsRefused) {
    const DeviceTensor x = nan_tensor(ctx(), 64, DType::F32, "X");
    const DeviceTensor q = nan_tensor(ctx(), 64, DType::F32, "Q");
    const DeviceTensor cache = nan_tensor(ctx(), 64 * 4, DType::F32, "cache");
    const std::uint32_t rows[] = {1};
    const DeviceTensor slots = upload_words(ctx(), rows, "slots");
    const QkvScatter good{.k_cache = cache.range(),
                          .v_cache = cache.range(),
                          .slots = slots.range(),
                          .cache_dtype = DType::F32,
                          .head_dim = 32,
                          .q_heads = 2,
                          .kv_heads = 2,
                          .interleaved = true};
    const auto attempt = [&](QkvScatter s, std::uint32_t n) {
        const DeviceTensor w = nan_tensor(ctx(), 64ull * n, DType::F32, "W");
        auto list = ctx().command_list();
        record_matmul(
            ctx(), *list,
            MatmulArgs{.x = x.range(), .w = w.range(), .y = q.range(), .m = 1, .n = n, .k = 64, .scatter = s});
    };
    if (ctx().limits().storage_buffers >= scatter_bindings(QuantFormat::None)) {
        EXPECT_NO_THROW(attempt(good, 192));
    } else {  // the geometry is checked first, then the storage buffers (VKF_LIMITS=spec_minimum)
        EXPECT_NE(error_message([&] { attempt(good, 192); }).find("needs 7 storage buffers"), std::string::npos);
    }
    EXPECT_NE(error_message([&] { attempt(good, 190); }).find("need 192"), std::string::npos);
    QkvScatter gqa = good;
    gqa.kv_heads = 1;
    EXPECT_NE(error_message([&] { attempt(gqa, 128); }).find("interleaved"), std::string::npos);
    QkvScatter no_slots = good;
    no_slots.slots = {};
    EXPECT_NE(error_message([&] { attempt(no_slots, 192); }).find("slots"), std::string::npos);
    // One slot per row of X: a range of two for one row is refused.
    const std::uint32_t two[] = {1, 2};
    const DeviceTensor too_many = upload_words(ctx(), two, "slots");
    QkvScatter long_slots = good;
    long_slots.slots = too_many.range();
    EXPECT_NE(error_message([&] { attempt(long_slots, 192); }).find("slots"), std::string::npos);
}

}  // namespace
}  // namespace vkf::test
