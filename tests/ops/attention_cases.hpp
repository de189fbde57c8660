#pragma once
// What the attention suites (test_attention*.cpp) share: one case of the tiled and rows
// kernels, its storage types, and its run against the double-precision CPU reference with
// the output poisoned first.

#include "host/ops/attention.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/quant/kv_quant.hpp"
#include "host/reference/attention.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkf::test {

struct Case {
    std::uint32_t batch, q_len, kv_len, n_head, n_kv_head, head_dim;
    MaskMode mask;
    AlibiMode alibi;
    DType dtype;
    bool slope_table = false;
    bool kv_lens = false;
    std::uint32_t force_splits = 0;
    float max_bias = 8.0f;
    AttentionKernel kernel = AttentionKernel::Auto;
    std::optional<DType> kv_dtype = std::nullopt;  // K/V storage; unset: dtype
    QuantFormat k_quant = QuantFormat::None;       // a quantized K and/or V (fp32 Q/O)
    QuantFormat v_quant = QuantFormat::None;
};

// The storage combinations the kernels support: Q/O dtype, and K/V dtype where it differs.
struct Storage {
    DType dtype;
    std::optional<DType> kv_dtype;
    QuantFormat k_quant = QuantFormat::None;
    QuantFormat v_quant = QuantFormat::None;
};
inline constexpr Storage kStorages[] = {
    {DType::F32, std::nullopt}, {DType::F16, std::nullopt}, {DType::F32, DType::F16}};
// Quantized K/V caches (head sizes of 32n): both q8_0, both q4_0, and K and V apart (q8_0 K
// over q4_0 V, f16 K over q4_0 V: each side's own format constant).
inline constexpr Storage kQuantStorages[] = {{DType::F32, std::nullopt, QuantFormat::Q8_0, QuantFormat::Q8_0},
                                             {DType::F32, std::nullopt, QuantFormat::Q4_0, QuantFormat::Q4_0},
                                             {DType::F32, std::nullopt, QuantFormat::Q8_0, QuantFormat::Q4_0},
                                             {DType::F32, std::nullopt, QuantFormat::None, QuantFormat::Q4_0}};

inline bool quantized(const Case& c) {
    return c.k_quant != QuantFormat::None || c.v_quant != QuantFormat::None;
}

// `c` with fp32 Q/O and an fp16 K/V cache, as a model session stores them.
inline Case with_f16_kv(Case c) {
    c.dtype = DType::F32;
    c.kv_dtype = DType::F16;
    return c;
}

inline Case in(const Storage& storage, Case c) {
    c.dtype = storage.dtype;
    c.kv_dtype = storage.kv_dtype;
    c.k_quant = storage.k_quant;
    c.v_quant = storage.v_quant;
    if (quantized(c) && c.head_dim % 32 != 0) {
        c.head_dim += 32 - c.head_dim % 32;  // the quantized formats' head sizes
    }
    return c;
}

// K or V on the device as a cache in `quant` (or `dense`) holds it, and the values it stands
// for: what the kernels read and the reference must see (a quantized cache's own error is the
// format's, docs/QUANTIZATION.md).
struct StoredKv {
    std::vector<float> values;
    DeviceTensor tensor;
};
inline StoredKv store_kv(Context& ctx, const std::vector<float>& x, DType dense, QuantFormat quant,
                         std::uint32_t row_values, const char* name) {
    if (quant == QuantFormat::None) {
        std::vector<float> values = rounded_to(dense, x);
        DeviceTensor tensor = upload_tensor(ctx, values, dense, name);
        return {std::move(values), std::move(tensor)};
    }
    const std::vector<std::uint32_t> words = kv_quantize(quant, x, row_values);
    return {kv_dequantize(quant, words, row_values), upload_words(ctx, words, name)};
}

inline std::string name(const Case& c) {
    return "b" + std::to_string(c.batch) + " q" + std::to_string(c.q_len) + " kv" + std::to_string(c.kv_len) + " h" +
           std::to_string(c.n_head) + "/" + std::to_string(c.n_kv_head) + " d" + std::to_string(c.head_dim) +
           (c.mask == MaskMode::Causal ? " causal" : " nomask") +
           (c.alibi == AlibiMode::Off      ? " noalibi"
            : c.alibi == AlibiMode::Causal ? " alibi-c"
                                           : " alibi-s") +
           " " + to_string(c.dtype) + (c.kv_dtype ? std::string(" kv ") + to_string(*c.kv_dtype) : "") +
           (quantized(c) ? std::string(" k ") + to_string(c.k_quant) + " v " + to_string(c.v_quant) : "") +
           (c.slope_table ? " table" : "") + (c.kv_lens ? " kvlens" : "") +
           (c.force_splits ? " splits" + std::to_string(c.force_splits) : "") +
           (c.kernel != AttentionKernel::Auto ? std::string(" ") + to_string(c.kernel) : "");
}

// Runs one case on `ctx` and checks it against the reference; returns the plan used.
inline AttentionPlan run_case(Context& ctx, const Case& c, std::uint64_t seed) {
    SCOPED_TRACE(name(c));
    const AttentionShape shape{c.batch, c.q_len, c.kv_len, c.n_head, c.n_kv_head, c.head_dim};
    std::vector<float> slopes;
    if (c.slope_table) {
        slopes = random_uniform(c.n_head, seed + 7, 0.01f, 1.0f);
    }
    std::vector<std::uint32_t> kv_lens;
    if (c.kv_lens) {
        for (std::uint32_t b = 0; b < c.batch; ++b) {
            kv_lens.push_back(c.kv_len - (b * 37 + 3) % c.kv_len);  // 1..kv_len, some rows fully masked
        }
    }
    const AttentionParams params{
        .shape = shape, .mask = c.mask, .alibi = c.alibi, .max_bias = c.max_bias, .slopes = slopes, .kv_lens = kv_lens};
    // The reference sees exactly what the GPU reads.
    const DType kv_dtype = c.kv_dtype.value_or(quantized(c) ? DType::F16 : c.dtype);
    const std::uint32_t d = c.n_kv_head * c.head_dim;  // a key row
    const auto q = rounded_to(c.dtype, random_uniform(q_element_count(shape), seed, -1.0f, 1.0f));
    const StoredKv ks =
        store_kv(ctx, random_uniform(kv_element_count(shape), seed + 1, -1.0f, 1.0f), kv_dtype, c.k_quant, d, "K");
    const StoredKv vs =
        store_kv(ctx, random_uniform(kv_element_count(shape), seed + 2, -1.0f, 1.0f), kv_dtype, c.v_quant, d, "V");
    const std::vector<float>& k = ks.values;
    const std::vector<float>& v = vs.values;
    const Attention op(ctx, params, c.dtype,
                       AttentionOptions{.force_splits = c.force_splits,
                                        .kernel = c.kernel,
                                        .kv_dtype = c.kv_dtype,
                                        .k_quant = c.k_quant,
                                        .v_quant = c.v_quant});
    EXPECT_EQ(op.kv_dtype(), kv_dtype);
    const DeviceTensor qb = upload_tensor(ctx, q, c.dtype, "Q");
    const DeviceTensor& kb = ks.tensor;
    const DeviceTensor& vb = vs.tensor;
    const DeviceTensor ob = nan_tensor(ctx, q.size(), c.dtype, "O");
    auto list = ctx.command_list();
    op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
    ctx.submit(*list);
    const std::vector<float> out = download_tensor(ctx, ob);
    const auto ref = reference::attention(params, q, k, v);
    const ErrorStats e = compare_to_reference(out, ref);
    // K and V reach the reference already rounded to their storage, so what is left is the
    // kernel's own error, bounded by the output's storage: an fp16 K/V cache with fp32 Q and
    // O must stay within the fp32 bound (reading Q or writing O through fp16 would not).
    const double tol = tolerance(c.dtype);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, tol) << describe(e) << " plan: " << op.plan().describe();
    EXPECT_LT(e.rel_l2, tol) << describe(e);
    if (c.force_splits > 1) {
        EXPECT_GT(op.plan().n_splits, 1u);
    }
    if (c.kernel != AttentionKernel::Auto) {
        EXPECT_EQ(op.plan().kernel, c.kernel);
    }
    return op.plan();
}

class Attention_ : public VulkanTest {};

}  // namespace vkf::test
