// Matmul with ggml's K-quant weights (Q2_K .. Q6_K, shaders/matmul_kquant.comp) and its
// 32-weight Q4_1, Q5_0, Q5_1 blocks (the same kernel) read as
// a GGUF file stores them, against the float64 product of the weights dequantize_kquant_row
// gives (ggml's own to_float bit for bit: tests/quant/test_kquant_ggml.cpp). Every output must
// lie within the bound docs/QUANTIZATION.md states:
//   |out - ref| <= 1.2 (k / 16 + 40) 2^-24 M + 1e-5 (|ref| + 1)   (the last term: epilogue)
// with M = sum over k of |x| (|d scale q| + |dmin min|), the magnitudes of what the kernel
// multiplies and subtracts (Q4_1, Q5_1: |d q| + |m|; Q5_0: |d q| + |16 d|). Super-blocks are random bytes (any scales,
// mins and values) with finite fp16 super-block scales; outputs are poisoned (NaN) before every run; odd and prime
// shapes, decoding and prefill, every epilogue, split K, W and X at unaligned offsets
// (Q6_K's 210-byte blocks start anywhere in a word), and the refusals of the kernels,
// shapes and paths K-quants do not have.

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"
#include "host/quant/kquant_format.hpp"
#include "host/reference/ops.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/ops/kquant_blocks.hpp"
#include "tests/support/vulkan_test.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>

namespace vkf::test {
namespace {

struct KCase {
    std::uint32_t m, n, k;
    QuantFormat quant;
    DType bias_dtype = DType::F32;
    bool bias = false;
    bool residual = false;
    Activation activation = Activation::None;
    std::uint32_t splits = 0;
    std::uint32_t x_pad = 0;  // floats in front of X (odd: unaligned)
    std::uint32_t w_pad = 0;  // bytes in front of W (not a multiple of 4: unaligned words)
};

std::string name(const KCase& c) {
    return "m" + std::to_string(c.m) + " n" + std::to_string(c.n) + " k" + std::to_string(c.k) + " " +
           to_string(c.quant) + (c.bias ? std::string(" bias ") + to_string(c.bias_dtype) : "") +
           (c.residual ? " residual" : "") + " " + to_string(c.activation) +
           (c.splits ? " splits" + std::to_string(c.splits) : "") + " x_pad" + std::to_string(c.x_pad) + " w_pad" +
           std::to_string(c.w_pad);
}

class MatmulKQuant : public VulkanTest {
protected:
    MatmulPlan run(const KCase& c, std::uint64_t seed) {
        SCOPED_TRACE(name(c));
        const auto x = random_uniform(std::size_t{c.m} * c.k, seed, -1.0f, 1.0f);
        const auto bias = c.bias ? random_uniform(c.n, seed + 2, -1.0f, 1.0f) : std::vector<float>{};
        const auto res =
            c.residual ? random_uniform(std::size_t{c.m} * c.n, seed + 3, -2.0f, 2.0f) : std::vector<float>{};
        const std::vector<std::uint8_t> blocks = random_blocks(c.quant, c.n, c.k, seed + 1);
        const GgmlType type = kquant_ggml_type(c.quant);
        const std::uint64_t row_bytes = kquant_row_bytes(type, c.k);
        std::vector<float> w(std::size_t{c.n} * c.k);
        for (std::uint32_t r = 0; r < c.n; ++r) {
            dequantize_kquant_row(type, std::span(blocks).subspan(r * row_bytes, row_bytes),
                                  std::span(w).subspan(std::size_t{r} * c.k, c.k));
        }
        // W `w_pad` bytes into a buffer of whole words.
        std::vector<std::uint8_t> padded(c.w_pad, 0xA5);
        padded.insert(padded.end(), blocks.begin(), blocks.end());
        std::vector<std::uint32_t> words((padded.size() + 3) / 4, 0);
        std::memcpy(words.data(), padded.data(), padded.size());
        const DeviceTensor wb = upload_words(ctx(), words, "W super-blocks");
        const BufferRange w_range{
            .buffer = wb.range().buffer, .offset = wb.range().offset + c.w_pad, .size = blocks.size()};
        const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X", c.x_pad);
        const DeviceTensor yb = nan_tensor(ctx(), std::uint64_t{c.m} * c.n, DType::F32, "Y");
        std::optional<DeviceTensor> bb, rb;
        if (c.bias)
            bb = upload_tensor(ctx(), bias, c.bias_dtype, "bias");
        if (c.residual)
            rb = upload_tensor(ctx(), res, DType::F32, "residual");
        const MatmulOptions options{.force_splits = c.splits};
        const MatmulPlan plan = plan_matmul(matmul_device(ctx()), c.m, c.n, c.k, c.bias_dtype, options, c.quant);
        Buffer scratch;
        if (plan.scratch_bytes > 0) {
            scratch = ctx().create_buffer(plan.scratch_bytes, MemoryKind::Device, "matmul scratch");
            poison(ctx(), scratch);
        }
        auto list = ctx().command_list();
        record_matmul(ctx(), *list,
                      MatmulArgs{.x = xb.range(),
                                 .w = w_range,
                                 .bias = bb ? bb->range() : BufferRange{},
                                 .residual = rb ? rb->range() : BufferRange{},
                                 .y = yb.range(),
                                 .scratch = plan.scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                                 .m = c.m,
                                 .n = c.n,
                                 .k = c.k,
                                 .weight_dtype = c.bias_dtype,
                                 .activation = c.activation,
                                 .options = options,
                                 .quant = c.quant});
        ctx().submit(*list);
        std::vector<float> out(std::size_t{c.m} * c.n);
        ctx().download(yb.buffer(), std::span(out), yb.range().offset);

        std::vector<float> rounded_bias = bias;
        if (c.bias_dtype == DType::F16) {
            for (float& v : rounded_bias)
                v = half_to_float(float_to_half(v));
        }
        const auto ref = reference::matmul(x, w, rounded_bias, res, c.m, c.n, c.k, c.activation);
        // M: |x| times |d scale q| + |dmin min| = |w + ml| + |ml|.
        const std::vector<float> ml = mins(c.quant, blocks, c.n, c.k);
        std::vector<float> ax(x.size()), aw(w.size());
        for (std::size_t i = 0; i < x.size(); ++i)
            ax[i] = std::fabs(x[i]);
        for (std::size_t i = 0; i < w.size(); ++i)
            aw[i] = std::fabs(w[i] + ml[i]) + std::fabs(ml[i]);
        const auto magnitude = reference::matmul(ax, aw, {}, {}, c.m, c.n, c.k);
        const double units = (c.k / 16.0 + 40.0) * std::ldexp(1.0, -24);
        std::size_t bad = 0, worst = 0;
        double worst_ratio = 0.0;
        for (std::size_t i = 0; i < out.size(); ++i) {
            const double bound = 1.2 * units * magnitude[i] + 1e-5 * (std::fabs(ref[i]) + 1.0);
            const double ratio = std::fabs(static_cast<double>(out[i]) - ref[i]) / bound;
            if (!(ratio <= 1.0)) {  // NaN (an unwritten output) too
                ++bad;
            }
            if (!(ratio <= worst_ratio)) {
                worst_ratio = ratio;
                worst = i;
            }
        }
        EXPECT_EQ(bad, 0u) << "worst at " << worst << ": " << out[worst] << " vs " << ref[worst] << " (error / bound "
                           << worst_ratio << "); plan: " << plan.describe();
        EXPECT_EQ(plan.kernel, MatmulKernel::Blocked);
        return plan;
    }
};

constexpr QuantFormat kFormats[] = {QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_K, QuantFormat::Q5_K,
                                    QuantFormat::Q6_K, QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1};
constexpr QuantFormat kLegacyFormats[] = {QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1};

TEST_F(MatmulKQuant, DecodeAndPrefillOverOddShapesAndOffsets) {
    std::uint64_t seed = 500;
    const KCase shapes[] = {{.m = 1, .n = 37, .k = 256},
                            {.m = 1, .n = 5, .k = 768, .x_pad = 3, .w_pad = 2},
                            {.m = 7, .n = 13, .k = 512, .w_pad = 1},
                            {.m = 3, .n = 1, .k = 256, .x_pad = 1, .w_pad = 3},
                            {.m = 17, .n = 23, .k = 1280},
                            {.m = 2, .n = 9, .k = 256, .w_pad = 6}};
    for (const QuantFormat q : kFormats) {
        for (KCase c : shapes) {
            c.quant = q;
            run(c, seed += 10);
            if (HasFatalFailure())
                return;
        }
    }
}

TEST_F(MatmulKQuant, EveryEpilogueBothBiasTypesAndSplitK) {
    std::uint64_t seed = 900;
    for (const QuantFormat q : kFormats) {
        for (std::uint32_t a = 0; a < 3; ++a) {
            const Activation act = a == 0 ? Activation::None : (a == 1 ? Activation::GeluTanh : Activation::GeluErf);
            const MatmulPlan plan = run(KCase{.m = 1 + 4 * a,
                                              .n = 11,
                                              .k = 1024,
                                              .quant = q,
                                              .bias_dtype = a == 1 ? DType::F16 : DType::F32,
                                              .bias = true,
                                              .residual = a != 1,
                                              .activation = act,
                                              .splits = a == 2 ? 3u : 0u},
                                        seed++);
            if (a == 2) {
                EXPECT_GE(plan.n_splits, 2u) << plan.describe();  // 4 super-blocks in 2 or more slices
            }
        }
    }
}

// Q4_1, Q5_0, Q5_1 rows are whole blocks of 32, not of 256: rows of 1, 3 and 15 blocks,
// decoding and prefill, unaligned W and X, and split K into slices of whole blocks.
TEST_F(MatmulKQuant, BlocksOf32OverShortRowsAndSplitK) {
    std::uint64_t seed = 1100;
    const KCase shapes[] = {{.m = 1, .n = 7, .k = 32},
                            {.m = 5, .n = 3, .k = 96, .x_pad = 1, .w_pad = 1},
                            {.m = 1, .n = 19, .k = 480, .w_pad = 2},
                            {.m = 9, .n = 6, .k = 160, .bias = true, .residual = true, .x_pad = 3, .w_pad = 3},
                            {.m = 2, .n = 5, .k = 480, .bias = true, .activation = Activation::GeluErf, .splits = 3}};
    for (const QuantFormat q : kLegacyFormats) {
        for (KCase c : shapes) {
            c.quant = q;
            const MatmulPlan plan = run(c, seed += 10);
            if (c.splits > 0) {
                EXPECT_GE(plan.n_splits, 2u) << plan.describe();
            }
            if (HasFatalFailure())
                return;
        }
    }
}

// The tied LM head: the embedding table as W, a long odd vocabulary at hidden 256 (llama-quantize's
// Q4_K_M and Q5_K_M store the kjv model's tied token_embd [4096, 256] as Q6_K).
TEST_F(MatmulKQuant, TiedLmHeadShape) {
    std::uint64_t seed = 1300;
    for (const QuantFormat q : kFormats) {
        run(KCase{.m = 2, .n = 1031, .k = 256, .quant = q}, seed++);
    }
}

// The fused QKV projection: Q to Y, K and V into fp32 caches at the rows' slots ([q | k | v]
// columns), fused and through the reduce pass (split K). Cache rows no slot names keep
// their values.
TEST_F(MatmulKQuant, QkvScatter) {
    std::uint64_t seed = 1400;
    constexpr std::uint32_t m = 3, D = 32, heads = 2, k = 512, capacity = 8;
    constexpr std::uint32_t cols = heads * D, n = 3 * cols;
    const std::vector<std::uint32_t> slots = {5, 0, 2};
    for (const QuantFormat q : {QuantFormat::Q4_K, QuantFormat::Q6_K, QuantFormat::Q5_0}) {
        for (const std::uint32_t splits : {0u, 2u}) {
            SCOPED_TRACE(std::string(to_string(q)) + " splits " + std::to_string(splits));
            const auto x = random_uniform(std::size_t{m} * k, seed++, -1.0f, 1.0f);
            const auto bias = random_uniform(n, seed++, -1.0f, 1.0f);
            const std::vector<std::uint8_t> blocks = random_blocks(q, n, k, seed++);
            const GgmlType type = kquant_ggml_type(q);
            const std::uint64_t row_bytes = kquant_row_bytes(type, k);
            std::vector<float> w(std::size_t{n} * k);
            for (std::uint32_t r = 0; r < n; ++r) {
                dequantize_kquant_row(type, std::span(blocks).subspan(r * row_bytes, row_bytes),
                                      std::span(w).subspan(std::size_t{r} * k, k));
            }
            std::vector<std::uint32_t> words((blocks.size() + 3) / 4, 0);
            std::memcpy(words.data(), blocks.data(), blocks.size());
            const DeviceTensor wb = upload_words(ctx(), words, "W super-blocks");
            const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
            const DeviceTensor bb = upload_tensor(ctx(), bias, DType::F32, "bias");
            const auto k_init = random_uniform(std::size_t{capacity} * cols, seed++, -3.0f, 3.0f);
            const auto v_init = random_uniform(std::size_t{capacity} * cols, seed++, -3.0f, 3.0f);
            const DeviceTensor kc = upload_tensor(ctx(), k_init, DType::F32, "K cache");
            const DeviceTensor vc = upload_tensor(ctx(), v_init, DType::F32, "V cache");
            const DeviceTensor qb = nan_tensor(ctx(), std::uint64_t{m} * cols, DType::F32, "Q");
            const DeviceTensor sb = upload_words(ctx(), slots, "slots");
            const MatmulOptions options{.force_splits = splits, .scatter = true};
            const MatmulPlan plan = plan_matmul(matmul_device(ctx()), m, n, k, DType::F32, options, q);
            if (!plan.scatter) {
                GTEST_SKIP() << "this device's storage buffers do not fit the SCATTER kernels";
            }
            Buffer scratch;
            if (plan.scratch_bytes > 0) {
                scratch = ctx().create_buffer(plan.scratch_bytes, MemoryKind::Device, "matmul scratch");
                poison(ctx(), scratch);
            }
            auto list = ctx().command_list();
            record_matmul(
                ctx(), *list, plan,
                MatmulArgs{
                    .x = xb.range(),
                    .w = BufferRange{.buffer = wb.range().buffer, .offset = wb.range().offset, .size = blocks.size()},
                    .bias = bb.range(),
                    .y = qb.range(),
                    .scratch = scratch.valid() ? whole(scratch) : BufferRange{},
                    .m = m,
                    .n = n,
                    .k = k,
                    .weight_dtype = DType::F32,
                    .options = options,
                    .quant = q,
                    .scatter = QkvScatter{.k_cache = kc.range(),
                                          .v_cache = vc.range(),
                                          .slots = sb.range(),
                                          .cache_dtype = DType::F32,
                                          .head_dim = D,
                                          .q_heads = heads,
                                          .kv_heads = heads}});
            ctx().submit(*list);
            const auto y = reference::matmul(x, w, bias, {}, m, n, k);
            const std::vector<float> qo = download_tensor(ctx(), qb), ko = download_tensor(ctx(), kc),
                                     vo = download_tensor(ctx(), vc);
            std::size_t bad = 0;
            for (std::uint32_t row = 0; row < m; ++row) {
                for (std::uint32_t col = 0; col < n; ++col) {
                    const double want = y[std::size_t{row} * n + col];
                    const float got = col < cols       ? qo[row * cols + col]
                                      : col < 2 * cols ? ko[slots[row] * cols + col - cols]
                                                       : vo[slots[row] * cols + col - 2 * cols];
                    // The fused bound's epilogue term alone suffices at k = 512 for these
                    // magnitudes; the full bound is checked by the other cases.
                    if (!(std::fabs(got - want) <= 1e-4 * (std::fabs(want) + 1.0)) && ++bad <= 3) {
                        ADD_FAILURE() << "row " << row << " col " << col << ": " << got << " vs " << want << "; "
                                      << plan.describe();
                    }
                }
            }
            for (std::uint32_t r = 0; r < capacity; ++r) {
                if (r == 5 || r == 0 || r == 2)
                    continue;
                for (std::uint32_t i = 0; i < cols; ++i) {
                    EXPECT_EQ(ko[r * cols + i], k_init[r * cols + i]) << "K cache row " << r << " changed";
                    EXPECT_EQ(vo[r * cols + i], v_init[r * cols + i]) << "V cache row " << r << " changed";
                }
            }
            EXPECT_EQ(bad, 0u);
        }
    }
}

TEST_F(MatmulKQuant, RefusesWhatK_QuantsHaveNoKernelFor) {
    const MatmulDevice device = matmul_device(ctx());
    const auto refusal = [&](std::uint32_t k, MatmulOptions options) -> std::string {
        try {
            plan_matmul(device, 1, 8, k, DType::F32, options, QuantFormat::Q5_K);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(refusal(288, {}).find("q5_K"), std::string::npos) << refusal(288, {});
    EXPECT_NE(refusal(288, {}).find("block size 256"), std::string::npos);
    try {
        plan_matmul(device, 1, 8, 48, DType::F32, {}, QuantFormat::Q5_1);
        ADD_FAILURE() << "q5_1 with k = 48 was planned";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("q5_1"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("block size 32"), std::string::npos) << e.what();
    }
    const std::string rowdot = refusal(256, {.kernel = MatmulKernel::RowDot});
    EXPECT_NE(rowdot.find("q5_K"), std::string::npos) << rowdot;
    const std::string tiled = refusal(256, {.kernel = MatmulKernel::Tiled});
    EXPECT_NE(tiled.find("q5_K"), std::string::npos) << tiled;
    const std::string int8 = refusal(256, {.int8_activations = true});
    EXPECT_NE(int8.find("int8"), std::string::npos) << int8;
    // Auto takes the K-quant kernel for decoding and prefill alike, in fp32 arithmetic.
    for (const std::uint32_t m : {1u, 64u}) {
        const MatmulPlan plan =
            plan_matmul(device, m, 64, 512, DType::F32, {.arithmetic = MatmulArithmetic::F16}, QuantFormat::Q4_K);
        EXPECT_EQ(plan.kernel, MatmulKernel::Blocked);
        EXPECT_FALSE(plan.f16_arithmetic);
    }
}

}  // namespace
}  // namespace vkf::test
