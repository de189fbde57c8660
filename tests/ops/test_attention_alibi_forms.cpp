// The ALiBi forms of particular families in every attention kernel (tiled, rows, split-KV,
// naive), against the double-precision reference: Falcon's bias, bf16(slope * key position)
// added before the softmax scale, and Jais' dynamic alibi_scaling (slopes times train_len / L
// past train_len keys), over lengths where the rounding and the scaling change the result.
// Seeded inputs, outputs poisoned before every run.

#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/ops/device_tensor.hpp"
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
};

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
    const DType kv_dtype = c.kv_dtype.value_or(c.dtype);
    // Large Q and K: scores of several units, so that bias differences show.
    const auto q = rounded_to(c.dtype, random_uniform(q_element_count(c.shape), seed, -2.0f, 2.0f));
    const auto k = rounded_to(kv_dtype, random_uniform(kv_element_count(c.shape), seed + 1, -2.0f, 2.0f));
    const auto v = rounded_to(kv_dtype, random_uniform(kv_element_count(c.shape), seed + 2, -1.0f, 1.0f));
    const DeviceTensor qb = upload_tensor(ctx, q, c.dtype, "Q");
    const DeviceTensor kb = upload_tensor(ctx, k, kv_dtype, "K");
    const DeviceTensor vb = upload_tensor(ctx, v, kv_dtype, "V");
    const DeviceTensor ob = nan_tensor(ctx, q.size(), c.dtype, "O");
    auto list = ctx.command_list();
    if (c.naive) {
        const NaiveAttention op(ctx, params, c.dtype);
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
        ctx.submit(*list);
    } else {
        const Attention op(
            ctx, params, c.dtype,
            AttentionOptions{.force_splits = c.force_splits, .kernel = c.kernel, .kv_dtype = c.kv_dtype});
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
