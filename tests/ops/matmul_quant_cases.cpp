#include "tests/ops/matmul_quant_cases.hpp"

#include "host/reference/ops.hpp"
#include "host/reference/quant_ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

namespace vkf::test {

QuantMatrix quantize(QuantFormat format, std::span<const float> w, std::uint32_t rows, std::uint32_t k) {
    const std::uint64_t row_bytes = quant_row_bytes(format, k), row_scales = quant_row_scales(k);
    QuantMatrix q{std::vector<std::uint8_t>(rows * row_bytes), std::vector<std::uint16_t>(rows * row_scales),
                  std::vector<float>(std::size_t{rows} * k)};
    for (std::uint32_t r = 0; r < rows; ++r) {
        const std::span values(q.values.data() + r * row_bytes, row_bytes);
        const std::span scales(q.scales.data() + r * row_scales, row_scales);
        quantize_row(format, w.subspan(std::size_t{r} * k, k), values, scales);
        dequantize_row(format, values, scales, std::span(q.dequantized.data() + std::size_t{r} * k, k));
    }
    return q;
}

QuantBuffers repeated_rows(Context& ctx, QuantFormat f, const QuantMatrix& q, std::uint32_t n, std::uint32_t k) {
    const std::uint64_t value_bytes = std::uint64_t{n} * quant_row_bytes(f, k);
    const std::uint64_t scale_bytes = std::uint64_t{n} * quant_row_scales(k) * 2;
    QuantBuffers out{ctx.create_buffer(value_bytes, MemoryKind::Device, "W values"),
                     ctx.create_buffer(scale_bytes, MemoryKind::Device, "W scales")};
    upload_repeated_bytes(ctx, out.values, std::as_bytes(std::span(q.values)), value_bytes);
    upload_repeated_bytes(ctx, out.scales, std::as_bytes(std::span(q.scales)), scale_bytes);
    return out;
}

// The values plane as 32-bit words (little-endian, as the device reads it), `pad_words` in.
DeviceTensor upload_values(Context& ctx, std::span<const std::uint8_t> bytes, std::uint32_t pad_words) {
    std::vector<std::uint32_t> words((bytes.size() + 3) / 4, 0);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    return upload_words(ctx, words, "W values", pad_words);
}

// The scales plane (fp16; each converts to float and back exactly), `pad` halves in.
DeviceTensor upload_scales(Context& ctx, std::span<const std::uint16_t> halves, std::uint32_t pad) {
    std::vector<float> floats(halves.size());
    std::transform(halves.begin(), halves.end(), floats.begin(), half_to_float);
    return upload_tensor(ctx, floats, DType::F16, "W scales", pad);
}

std::string name(const Case& c) {
    return "m" + std::to_string(c.m) + " n" + std::to_string(c.n) + " k" + std::to_string(c.k) + " " +
           to_string(c.quant) + " bias " + to_string(c.bias_dtype) + (c.bias ? " bias" : "") +
           (c.residual ? " residual" : "") + " " + to_string(c.activation) + " kernel=" + to_string(c.options.kernel) +
           (c.options.force_splits ? " splits" + std::to_string(c.options.force_splits) : "") +
           (c.options.int8_activations ? " int8 X" : "") +
           (c.options.arithmetic != MatmulArithmetic::Auto ? std::string(" ") + to_string(c.options.arithmetic) : "") +
           (c.x_range != 1.0f ? " x_range" + std::to_string(c.x_range) : "") +
           (c.pad ? " pad" + std::to_string(c.pad) : "") + (c.w_pad ? " w_pad" + std::to_string(c.w_pad) : "");
}

// Runs one case on `ctx`, checks it against the reference and returns the plan used.
MatmulPlan run_case(Context& ctx, const Case& c, std::uint64_t seed) {
    SCOPED_TRACE(name(c));
    const auto x = random_uniform(std::size_t{c.m} * c.k, seed, -c.x_range, c.x_range);
    const auto w = random_uniform(std::size_t{c.n} * c.k, seed + 1, -1.0f, 1.0f);
    const auto bias = c.bias ? random_uniform(c.n, seed + 2, -1.0f, 1.0f) : std::vector<float>{};
    const auto res = c.residual ? random_uniform(std::size_t{c.m} * c.n, seed + 3, -2.0f, 2.0f) : std::vector<float>{};
    const QuantMatrix q = quantize(c.quant, w, c.n, c.k);
    const DeviceTensor xb = upload_tensor(ctx, x, DType::F32, "X", c.pad);
    const DeviceTensor vb = upload_values(ctx, q.values, c.w_pad);
    const DeviceTensor sb = upload_scales(ctx, q.scales, c.pad);
    const DeviceTensor yb = nan_tensor(ctx, std::uint64_t{c.m} * c.n, DType::F32, "Y", c.pad);
    std::optional<DeviceTensor> bb, rb;
    if (c.bias)
        bb = upload_tensor(ctx, bias, c.bias_dtype, "bias", c.pad);
    if (c.residual)
        rb = upload_tensor(ctx, res, DType::F32, "residual", c.pad);

    const MatmulPlan plan = plan_matmul(matmul_device(ctx), c.m, c.n, c.k, c.bias_dtype, c.options, c.quant);
    EXPECT_EQ(plan.quant, c.quant);
    EXPECT_EQ(plan.scratch_bytes, matmul_scratch_bytes(ctx, c.m, c.n, c.k, c.bias_dtype, c.options, c.quant));
    Buffer scratch;
    if (plan.scratch_bytes > 0) {
        scratch = ctx.create_buffer(plan.scratch_bytes, MemoryKind::Device, "matmul scratch");
        poison(ctx, scratch);
    }
    auto list = ctx.command_list();
    record_matmul(ctx, *list,
                  MatmulArgs{.x = xb.range(),
                             .w = vb.range(),
                             .bias = bb ? bb->range() : BufferRange{},
                             .residual = rb ? rb->range() : BufferRange{},
                             .y = yb.range(),
                             .scratch = plan.scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                             .m = c.m,
                             .n = c.n,
                             .k = c.k,
                             .weight_dtype = c.bias_dtype,
                             .activation = c.activation,
                             .options = c.options,
                             .quant = c.quant,
                             .scales = sb.range()});
    ctx.submit(*list);
    std::vector<float> out(std::size_t{c.m} * c.n);
    ctx.download(yb.buffer(), std::span(out), yb.range().offset);

    if (plan.int_dot) {
        // X quantized to int8: the reference of exactly that, each output within fp32
        // rounding of its blocks' magnitudes (the GPU adds the blocks in fp32).
        std::vector<double> magnitude;
        const auto ref =
            reference::matmul_int8_activations(c.quant, x, q.values, q.scales, rounded_to(c.bias_dtype, bias), res, c.m,
                                               c.n, c.k, c.activation, &magnitude);
        std::size_t bad = 0, worst = 0;
        double worst_ratio = 0.0;
        for (std::size_t i = 0; i < out.size(); ++i) {
            const double scale = magnitude[i] + (res.empty() ? 0.0 : std::fabs(res[i])) +
                                 (bias.empty() ? 0.0 : std::fabs(bias[i % c.n])) + 1e-3;
            const double ratio = std::fabs(static_cast<double>(out[i]) - ref[i]) / scale;
            if (!(ratio <= 1e-5)) {
                ++bad;
            }
            if (!(ratio <= worst_ratio)) {
                worst_ratio = ratio;
                worst = i;
            }
        }
        EXPECT_EQ(bad, 0u) << "worst at " << worst << ": " << out[worst] << " vs " << ref[worst]
                           << " (error / magnitude " << worst_ratio << "); plan: " << plan.describe();
        return plan;
    }
    // The dequantized weights are exactly what the kernels multiply: fp32 tolerance, or
    // with fp16 arithmetic its bound.
    const auto ref =
        reference::matmul(x, q.dequantized, rounded_to(c.bias_dtype, bias), res, c.m, c.n, c.k, c.activation);
    if (plan.f16_arithmetic) {
        expect_within_f16_bound(out, ref, magnitudes(x, q.dequantized, c.m, c.n, c.k), plan.describe());
        return plan;
    }
    const ErrorStats e = compare_to_reference(out, ref);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, tolerance(DType::F32)) << describe(e) << "; plan: " << plan.describe();
    EXPECT_LT(e.rel_l2, tolerance(DType::F32)) << describe(e);
    if (ctx.limits().max_loop_iterations != 0) {
        EXPECT_LE(plan.loop_iterations, ctx.limits().max_loop_iterations / 2) << plan.describe();
    }
    return plan;
}

double f16_products_bound(double magnitude) {
    const double u = std::ldexp(1.0, -11);
    return 1.2 * (kF16ErrorUnits * u + std::ldexp(1.0, -13)) * magnitude;
}

void expect_within_f16_bound(std::span<const float> out, std::span<const double> ref, std::span<const double> magnitude,
                             const std::string& plan) {
    std::size_t bad = 0, worst = 0;
    double worst_ratio = 0.0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const double bound = f16_products_bound(magnitude[i]) + 1e-5 * (std::fabs(ref[i]) + 1.0);
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
                       << worst_ratio << "); plan: " << plan;
    // The bound is for the worst case, which random signs never near: an fp16 sum that grows
    // with K (a fold lost) can stay inside it at K = 4096 while its error over all outputs is
    // several times fp16's tolerance, so that is checked too (the folds stay under it), over 8
    // outputs or more: one output may be a near-cancelled sum, small against its error.
    EXPECT_LT(worst_ratio, 0.5) << "plan: " << plan;
    if (out.size() >= 8) {
        const ErrorStats e = compare_to_reference(out, ref);
        EXPECT_LT(e.rel_l2, tolerance(DType::F16)) << describe(e) << "; plan: " << plan;
    }
}

std::vector<double> magnitudes(std::span<const float> x, std::span<const float> w, std::uint32_t m, std::uint32_t n,
                               std::uint32_t k) {
    std::vector<float> ax(x.begin(), x.end()), aw(w.begin(), w.end());
    for (float& v : ax)
        v = std::fabs(v);
    for (float& v : aw)
        v = std::fabs(v);
    return reference::matmul(ax, aw, {}, {}, m, n, k);
}

Activation activation_of(std::uint32_t i) {
    return i % 3 == 0 ? Activation::None : (i % 3 == 1 ? Activation::GeluTanh : Activation::GeluErf);
}

QuantFormat format_of(std::uint32_t i) {
    return i % 2 == 0 ? QuantFormat::Q8_0 : QuantFormat::Q4_0;
}

// Whether the row-dot kernel (subgroup arithmetic) runs here: only where full subgroups of
// a known size can be required.
bool rowdot_runs(const Context& ctx) {
    return ctx.limits().subgroup_ops && ctx.limits().subgroup_size_control;
}

// The kernel Auto picks: row dots for up to 4 rows on GPUs with subgroup arithmetic and
// subgroup size control, register blocks otherwise and on CPU devices.
MatmulKernel expected_kernel(Context& ctx, std::uint32_t m) {
    return !matmul_device(ctx).cpu && rowdot_runs(ctx) && m <= 4 ? MatmulKernel::RowDot : MatmulKernel::Blocked;
}

// 28 cases over odd and prime m and n, k from one block to 33, both formats, both bias
// types, every epilogue, some tensors at unaligned offsets.
std::vector<Case> odd_shape_grid() {
    const std::uint32_t ms[] = {1, 2, 3, 7, 13, 67, 129};
    const std::uint32_t ns[] = {1, 3, 7, 13, 37, 64, 67, 129, 257};
    const std::uint32_t ks[] = {32, 64, 96, 160, 256, 544, 1056, 1024};
    std::vector<Case> cases;
    std::uint32_t step = 0;
    for (std::uint32_t m : ms) {
        for (std::uint32_t i = 0; i < 4; ++i, ++step) {
            cases.push_back(Case{.m = m,
                                 .n = ns[(step * 5 + i) % std::size(ns)],
                                 .k = ks[(step * 3 + i) % std::size(ks)],
                                 .quant = format_of(step),
                                 .bias_dtype = step % 4 < 2 ? DType::F32 : DType::F16,
                                 .bias = step % 3 != 2,
                                 .residual = step % 4 == 1,
                                 .activation = activation_of(step / 2),
                                 .pad = step % 5 == 3 ? 1u : 0u});
        }
    }
    return cases;
}

MatmulPlan run_dense(Context& ctx, const DenseCase& c, std::uint64_t seed) {
    SCOPED_TRACE(std::string(to_string(c.kernel)) + " m" + std::to_string(c.m) + " n" + std::to_string(c.n) + " k" +
                 std::to_string(c.k) + (c.bias ? " bias" : "") + (c.residual ? " residual" : "") + " " +
                 to_string(c.activation) + " splits" + std::to_string(c.splits) + " pad" + std::to_string(c.pad) +
                 " x_range" + std::to_string(c.x_range));
    const auto x = random_uniform(std::size_t{c.m} * c.k, seed, -c.x_range, c.x_range);
    const auto w = rounded_to(DType::F16, random_uniform(std::size_t{c.n} * c.k, seed + 1, -1.0f, 1.0f));
    const auto bias =
        c.bias ? rounded_to(DType::F16, random_uniform(c.n, seed + 2, -1.0f, 1.0f)) : std::vector<float>{};
    const auto res = c.residual ? random_uniform(std::size_t{c.m} * c.n, seed + 3, -2.0f, 2.0f) : std::vector<float>{};
    const DeviceTensor xb = upload_tensor(ctx, x, DType::F32, "X", c.pad);
    const DeviceTensor wb = upload_tensor(ctx, w, DType::F16, "W", c.pad);
    const DeviceTensor yb = nan_tensor(ctx, std::uint64_t{c.m} * c.n, DType::F32, "Y", c.pad);
    std::optional<DeviceTensor> bb, rb;
    if (c.bias)
        bb = upload_tensor(ctx, bias, DType::F16, "bias", c.pad);
    if (c.residual)
        rb = upload_tensor(ctx, res, DType::F32, "residual", c.pad);
    const MatmulOptions options{.kernel = c.kernel, .force_splits = c.splits, .arithmetic = MatmulArithmetic::F16};
    const MatmulPlan plan = plan_matmul(matmul_device(ctx), c.m, c.n, c.k, DType::F16, options);
    EXPECT_EQ(plan.kernel, c.kernel) << plan.describe();
    if (ctx.limits().max_loop_iterations != 0) {
        EXPECT_LE(plan.loop_iterations, ctx.limits().max_loop_iterations / 2) << plan.describe();
    }
    Buffer scratch;
    if (plan.scratch_bytes > 0) {
        scratch = ctx.create_buffer(plan.scratch_bytes, MemoryKind::Device, "matmul scratch");
        poison(ctx, scratch);
    }
    auto list = ctx.command_list();
    record_matmul(ctx, *list, plan,
                  MatmulArgs{.x = xb.range(),
                             .w = wb.range(),
                             .bias = bb ? bb->range() : BufferRange{},
                             .residual = rb ? rb->range() : BufferRange{},
                             .y = yb.range(),
                             .scratch = plan.scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                             .m = c.m,
                             .n = c.n,
                             .k = c.k,
                             .weight_dtype = DType::F16,
                             .activation = c.activation});
    ctx.submit(*list);
    std::vector<float> out(std::size_t{c.m} * c.n);
    ctx.download(yb.buffer(), std::span(out), yb.range().offset);
    const auto ref = reference::matmul(x, w, bias, res, c.m, c.n, c.k, c.activation);
    if (plan.f16_arithmetic) {
        expect_within_f16_bound(out, ref, magnitudes(x, w, c.m, c.n, c.k), plan.describe());
    } else {
        const ErrorStats e = compare_to_reference(out, ref);
        EXPECT_LT(e.max_rel, 1e-5) << describe(e) << "; plan: " << plan.describe();
    }
    return plan;
}

}  // namespace vkf::test
