// The ALiBi forms of particular families in every attention kernel (tiled, rows, split-KV,
// naive), against the double-precision reference: Falcon's bias, bf16(slope * key position)
// added before the softmax scale, and Jais' dynamic alibi_scaling (slopes times train_len / L
// past train_len keys), over lengths where the rounding and the scaling change the result.
// Seeded inputs, outputs poisoned before every run.

#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/quant/kv_quant.hpp"
#include "host/reference/attention.hpp"
#include "host/spec/alibi.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <optional>

namespace vkf::test {
namespace {

struct FormCase {
    const char* name;
    AttentionShape shape;
    AlibiMode alibi;
    std::uint32_t train_len = 0;
    AttentionKernel kernel = AttentionKernel::Auto;
    std::uint32_t force_splits = 0;
    DType dtype = DType::F32;
    std::optional<DType> kv_dtype = std::nullopt;
    bool naive = false;
    QuantFormat k_quant = QuantFormat::None;  // quantized K/V (fp32 Q/O, the other side fp16)
    QuantFormat v_quant = QuantFormat::None;
};

// K or V as its storage holds it: the device tensor, and `x` becomes the values it stands for.
DeviceTensor stored(Context& ctx, std::vector<float>& x, DType dense, QuantFormat quant, std::uint32_t row_values,
                    const char* name) {
    if (quant == QuantFormat::None) {
        x = rounded_to(dense, x);
        return upload_tensor(ctx, x, dense, name);
    }
    const std::vector<std::uint32_t> words = kv_quantize(quant, x, row_values);
    x = kv_dequantize(quant, words, row_values);
    return upload_words(ctx, words, name);
}

// Falcon's slopes: the paper's, rounded to bfloat16; 20 heads (c = 16) so that they are not
// powers of two and slope * position has bits bf16 drops.
std::vector<float> falcon_slopes(std::uint32_t n_head) {
    std::vector<float> slopes = alibi_slopes(n_head, 8.0);
    for (float& s : slopes) {
        s = bfloat16_to_float(float_to_bfloat16(s));
    }
    return slopes;
}

class AttentionAlibiForms_ : public VulkanTest {};

// Runs the case and returns the GPU output next to the reference's; checks the error.
std::vector<float> run_form(Context& ctx, const FormCase& c, std::uint64_t seed) {
    SCOPED_TRACE(c.name);
    const std::vector<float> slopes = falcon_slopes(c.shape.n_head);
    const AttentionParams params{
        .shape = c.shape, .mask = MaskMode::Causal, .alibi = c.alibi, .slopes = slopes, .alibi_train_len = c.train_len};
    const bool quant = c.k_quant != QuantFormat::None || c.v_quant != QuantFormat::None;
    const DType kv_dtype = c.kv_dtype.value_or(quant ? DType::F16 : c.dtype);
    // Large Q and K: scores of several units, so that bias differences show.
    const auto q = rounded_to(c.dtype, random_uniform(q_element_count(c.shape), seed, -2.0f, 2.0f));
    auto k = random_uniform(kv_element_count(c.shape), seed + 1, -2.0f, 2.0f);
    auto v = random_uniform(kv_element_count(c.shape), seed + 2, -1.0f, 1.0f);
    const DeviceTensor qb = upload_tensor(ctx, q, c.dtype, "Q");
    const DeviceTensor kb = stored(ctx, k, kv_dtype, c.k_quant, c.shape.n_kv_head * c.shape.head_dim, "K");
    const DeviceTensor vb = stored(ctx, v, kv_dtype, c.v_quant, c.shape.n_kv_head * c.shape.head_dim, "V");
    const DeviceTensor ob = nan_tensor(ctx, q.size(), c.dtype, "O");
    auto list = ctx.command_list();
    if (c.naive) {
        const NaiveAttention op(ctx, params, c.dtype, std::nullopt, c.k_quant, c.v_quant);
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
        ctx.submit(*list);
    } else {
        const Attention op(ctx, params, c.dtype,
                           AttentionOptions{.force_splits = c.force_splits,
                                            .kernel = c.kernel,
                                            .kv_dtype = c.kv_dtype,
                                            .k_quant = c.k_quant,
                                            .v_quant = c.v_quant});
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
        ctx.submit(*list);
        if (c.force_splits > 1) {
            EXPECT_GT(op.plan().n_splits, 1u);
        }
    }
    const std::vector<float> out = download_tensor(ctx, ob);
    const ErrorStats e = compare_to_reference(out, reference::attention(params, q, k, v));
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, tolerance(c.dtype)) << describe(e);
    return out;
}

TEST_F(AttentionAlibiForms_, FalconBf16BiasInEveryKernel) {
    const AttentionShape prefill{1, 37, 301, 20, 20, 64};
    const AttentionShape decode{2, 1, 613, 20, 4, 32};
    std::uint64_t seed = 40;
    for (AttentionKernel kernel : {AttentionKernel::Tiled, AttentionKernel::Rows}) {
        run_form(ctx(), {"falcon prefill", prefill, AlibiMode::FalconBf16, 0, kernel}, seed++);
        run_form(ctx(), {"falcon decode split", decode, AlibiMode::FalconBf16, 0, kernel, 4}, seed++);
        run_form(ctx(), {"falcon f16 kv", prefill, AlibiMode::FalconBf16, 0, kernel, 0, DType::F32, DType::F16},
                 seed++);
    }
    run_form(ctx(), {"falcon naive", {1, 17, 130, 20, 20, 32}, AlibiMode::FalconBf16, 0, {}, 0, DType::F32, {}, true},
             seed++);
}

// Falcon's and Jais' forms over quantized K/V caches in every kernel.
TEST_F(AttentionAlibiForms_, EveryFormOverQuantizedKv) {
    std::uint64_t seed = 80;
    const AttentionShape prefill{1, 37, 301, 20, 20, 64};
    const AttentionShape decode{2, 1, 613, 20, 4, 32};
    const QuantFormat q8 = QuantFormat::Q8_0, q4 = QuantFormat::Q4_0;
    for (AttentionKernel kernel : {AttentionKernel::Tiled, AttentionKernel::Rows}) {
        FormCase falcon{"falcon q8_0", prefill, AlibiMode::FalconBf16, 0, kernel};
        falcon.k_quant = falcon.v_quant = q8;
        run_form(ctx(), falcon, seed++);
        FormCase jais{"jais decode split q4_0 v", decode, AlibiMode::Causal, 100, kernel, 4};
        jais.k_quant = kernel == AttentionKernel::Tiled ? q4 : q8;
        jais.v_quant = q4;
        run_form(ctx(), jais, seed++);
    }
    FormCase naive{
        "falcon naive q4_0", {1, 17, 130, 20, 20, 32}, AlibiMode::FalconBf16, 0, {}, 0, DType::F32, {}, true};
    naive.k_quant = naive.v_quant = q4;
    run_form(ctx(), naive, seed++);
}

TEST_F(AttentionAlibiForms_, FalconRoundingAndScaleMatter) {
    // The same slopes in BLOOM's form (unrounded, after the scale) give another result.
    const FormCase falcon{"falcon", {1, 9, 300, 20, 20, 64}, AlibiMode::FalconBf16};
    FormCase bloom = falcon;
    bloom.alibi = AlibiMode::Causal;
    const auto a = run_form(ctx(), falcon, 5);
    const auto b = run_form(ctx(), bloom, 5);
    const ErrorStats e = compare_to_reference(a, std::vector<double>(b.begin(), b.end()));
    EXPECT_GT(e.max_rel, 1e-2) << describe(e);
}

TEST_F(AttentionAlibiForms_, DynamicScalingInEveryKernel) {
    std::uint64_t seed = 60;
    for (AttentionKernel kernel : {AttentionKernel::Tiled, AttentionKernel::Rows}) {
        // Past the training length (200 keys against 64), and under it (the slopes unchanged).
        run_form(ctx(), {"jais past train_len", {1, 23, 200, 7, 7, 32}, AlibiMode::Causal, 64, kernel}, seed++);
        run_form(ctx(), {"jais under train_len", {1, 23, 50, 7, 7, 32}, AlibiMode::Causal, 64, kernel}, seed++);
        run_form(ctx(), {"jais decode split", {3, 1, 700, 6, 6, 64}, AlibiMode::Causal, 100, kernel, 4}, seed++);
    }
    run_form(ctx(), {"jais naive", {1, 11, 90, 5, 5, 32}, AlibiMode::Causal, 30, {}, 0, DType::F32, {}, true}, seed++);
    // The scaling matters: without it the output differs.
    const auto with = run_form(ctx(), {"with", {1, 5, 400, 8, 8, 32}, AlibiMode::Causal, 40}, 99);
    const auto without = run_form(ctx(), {"without", {1, 5, 400, 8, 8, 32}, AlibiMode::Causal, 0}, 99);
    const ErrorStats e = compare_to_reference(with, std::vector<double>(without.begin(), without.end()));
    EXPECT_GT(e.max_rel, 1e-2) << describe(e);
}

}  // namespace
}  // namespace vkf::test
