// Matmul with block-quantized weights (q8_0, q4_0) against the double-precision CPU
// reference run on the exactly dequantized weights (dequantize_row), so the fp32 tolerance
// holds: seeded random inputs over odd and prime shapes, k multiples of 32 (powers of two
// and not), decode (m = 1) and prefill shapes, both kernels and every epilogue, split-K,
// long K under llvmpipe's loop limit, tensors at unaligned offsets, weights bound in row
// ranges and forced smaller limits (phone, no subgroup operations). Outputs are poisoned
// (NaN) before every run.
// The integer dot-product path (MatmulOptions::int8_activations: X quantized to int8 per
// block) against the CPU reference of exactly that computation
// (reference::matmul_int8_activations) at a tolerance scaled by each output's sum of block
// magnitudes; the fallback with no_integer_dot; and its error against the dequantized-weight
// reference (printed, loosely bounded).

#include "host/ops/device_tensor.hpp"
#include "host/ops/matmul.hpp"
#include "host/reference/ops.hpp"
#include "host/reference/quant_ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>

namespace vkf::test {
namespace {

// A [rows, k] matrix quantized row by row, and the exact weights it stands for.
struct QuantMatrix {
    std::vector<std::uint8_t> values;
    std::vector<std::uint16_t> scales;
    std::vector<float> dequantized;
};

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

// An n-row weight made of `q`'s rows repeated, for timing large shapes: the kernels read
// every byte whatever the values.
struct QuantBuffers {
    Buffer values;
    Buffer scales;
};
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
DeviceTensor upload_values(Context& ctx, std::span<const std::uint8_t> bytes, std::uint32_t pad_words = 0) {
    std::vector<std::uint32_t> words((bytes.size() + 3) / 4, 0);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    return upload_words(ctx, words, "W values", pad_words);
}

// The scales plane (fp16; each converts to float and back exactly), `pad` halves in.
DeviceTensor upload_scales(Context& ctx, std::span<const std::uint16_t> halves, std::uint32_t pad = 0) {
    std::vector<float> floats(halves.size());
    std::transform(halves.begin(), halves.end(), floats.begin(), half_to_float);
    return upload_tensor(ctx, floats, DType::F16, "W scales", pad);
}

struct Case {
    std::uint32_t m, n, k;
    QuantFormat quant = QuantFormat::Q8_0;
    DType bias_dtype = DType::F32;
    bool bias = false;
    bool residual = false;
    Activation activation = Activation::None;
    MatmulOptions options{};
    std::uint32_t pad = 0;    // elements in front of X, bias, residual, Y and scales (odd: unaligned)
    std::uint32_t w_pad = 0;  // words in front of the values (not a multiple of 4: no vector loads)
};

std::string name(const Case& c) {
    return "m" + std::to_string(c.m) + " n" + std::to_string(c.n) + " k" + std::to_string(c.k) + " " +
           to_string(c.quant) + " bias " + to_string(c.bias_dtype) + (c.bias ? " bias" : "") +
           (c.residual ? " residual" : "") + " " + to_string(c.activation) + " kernel=" + to_string(c.options.kernel) +
           (c.options.force_splits ? " splits" + std::to_string(c.options.force_splits) : "") +
           (c.options.int8_activations ? " int8 X" : "") + (c.pad ? " pad" + std::to_string(c.pad) : "") +
           (c.w_pad ? " w_pad" + std::to_string(c.w_pad) : "");
}

// Runs one case on `ctx`, checks it against the reference and returns the plan used.
MatmulPlan run_case(Context& ctx, const Case& c, std::uint64_t seed) {
    SCOPED_TRACE(name(c));
    const auto x = random_uniform(std::size_t{c.m} * c.k, seed, -1.0f, 1.0f);
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
    // The dequantized weights are exactly what the kernels multiply: fp32 tolerance.
    const auto ref =
        reference::matmul(x, q.dequantized, rounded_to(c.bias_dtype, bias), res, c.m, c.n, c.k, c.activation);
    const ErrorStats e = compare_to_reference(out, ref);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, tolerance(DType::F32)) << describe(e) << "; plan: " << plan.describe();
    EXPECT_LT(e.rel_l2, tolerance(DType::F32)) << describe(e);
    if (ctx.limits().max_loop_iterations != 0) {
        EXPECT_LE(plan.loop_iterations, ctx.limits().max_loop_iterations / 2) << plan.describe();
    }
    return plan;
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

class MatmulQuant : public VulkanTest {};

TEST_F(MatmulQuant, MatchesTheReferenceOverOddAndPrimeShapes) {
    std::uint64_t seed = 100;
    for (const Case& c : odd_shape_grid()) {
        const MatmulPlan plan = run_case(ctx(), c, seed += 10);
        EXPECT_EQ(plan.kernel, expected_kernel(ctx(), c.m)) << plan.describe();
        if (HasFatalFailure())
            return;
    }
}

TEST_F(MatmulQuant, EveryKernelWithEveryEpilogueBothFormatsAndBiasTypes) {
    std::uint64_t seed = 1000;
    for (MatmulKernel kernel : {MatmulKernel::RowDot, MatmulKernel::Blocked}) {
        if (kernel == MatmulKernel::RowDot && !rowdot_runs(ctx()))
            continue;  // no subgroup arithmetic, or full subgroups cannot be required
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            for (DType bt : {DType::F32, DType::F16}) {
                for (std::uint32_t a = 0; a < 3; ++a) {
                    const MatmulPlan plan = run_case(ctx(),
                                                     Case{.m = 1 + 6 * a,
                                                          .n = 37,
                                                          .k = 160,
                                                          .quant = f,
                                                          .bias_dtype = bt,
                                                          .bias = true,
                                                          .residual = a != 1,
                                                          .activation = activation_of(a),
                                                          .options = {.kernel = kernel}},
                                                     seed++);
                    EXPECT_EQ(plan.kernel, kernel);
                }
                // Unaligned tensors: X, bias, residual, Y and scales an odd number of elements
                // in, the values one word in (scalar loads instead of vectors), and both.
                run_case(ctx(),
                         Case{.m = 2,
                              .n = 11,
                              .k = 96,
                              .quant = f,
                              .bias_dtype = bt,
                              .bias = true,
                              .residual = true,
                              .options = {.kernel = kernel},
                              .pad = 3},
                         seed++);
                run_case(ctx(), Case{.m = 3, .n = 13, .k = 544, .quant = f, .options = {.kernel = kernel}, .w_pad = 1},
                         seed++);
                run_case(ctx(),
                         Case{.m = 1,
                              .n = 7,
                              .k = 64,
                              .quant = f,
                              .bias_dtype = bt,
                              .bias = true,
                              .options = {.kernel = kernel},
                              .pad = 1,
                              .w_pad = 2},
                         seed++);
            }
        }
    }
}

TEST_F(MatmulQuant, DecodeAndPrefillShapes) {
    std::uint64_t seed = 2000;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        // BLOOM-560m's rows (hidden 1024, MLP 4096) at m = 1, and prefill blocks.
        auto plan =
            run_case(ctx(), Case{.m = 1, .n = 1024, .k = 1024, .quant = f, .bias = true, .residual = true}, seed++);
        EXPECT_EQ(plan.kernel, expected_kernel(ctx(), 1));
        run_case(ctx(),
                 Case{.m = 1,
                      .n = 4096,
                      .k = 1024,
                      .quant = f,
                      .bias_dtype = DType::F16,
                      .bias = true,
                      .activation = Activation::GeluTanh},
                 seed++);
        run_case(ctx(), Case{.m = 1, .n = 1024, .k = 4096, .quant = f, .bias = true, .residual = true}, seed++);
        // A small output over a long row splits K for parallelism.
        plan = run_case(ctx(), Case{.m = 1, .n = 8, .k = 4096, .quant = f, .bias = true}, seed++);
        EXPECT_GT(plan.n_splits, 1u) << plan.describe();
        plan = run_case(ctx(),
                        Case{.m = 67,
                             .n = 300,
                             .k = 1056,
                             .quant = f,
                             .bias_dtype = DType::F16,
                             .bias = true,
                             .activation = Activation::GeluErf},
                        seed++);
        EXPECT_EQ(plan.kernel, MatmulKernel::Blocked);
    }
}

TEST_F(MatmulQuant, SplitKAddsTheSlicesBeforeTheEpilogue) {
    std::uint64_t seed = 4000;
    for (MatmulKernel kernel : {MatmulKernel::RowDot, MatmulKernel::Blocked}) {
        if (kernel == MatmulKernel::RowDot && !rowdot_runs(ctx()))
            continue;  // no subgroup arithmetic, or full subgroups cannot be required
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            for (DType bt : {DType::F32, DType::F16}) {
                const auto plan = run_case(ctx(),
                                           Case{.m = 5,
                                                .n = 19,
                                                .k = 352,
                                                .quant = f,
                                                .bias_dtype = bt,
                                                .bias = true,
                                                .residual = true,
                                                .activation = Activation::GeluErf,
                                                .options = {.kernel = kernel, .force_splits = 3},
                                                .pad = 1},
                                           seed++);
                EXPECT_GE(plan.n_splits, 3u);
                EXPECT_EQ(plan.k_split % 32, 0u);
                EXPECT_GT(plan.scratch_bytes, 0u);
            }
        }
    }
}

TEST_F(MatmulQuant, LongKStaysRightOnDriversWithALoopLimit) {
    // llvmpipe skips loop iterations past 65535 per invocation (runtime/quirks.cpp). The
    // blocked kernel loops once per block: K = 2^20 + 96 (32771 blocks) must split there.
    // force_splits = 1 turns off splitting for parallelism: only the loop limit splits here.
    std::uint64_t seed = 5000;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (MatmulKernel kernel : {MatmulKernel::Auto, MatmulKernel::Blocked}) {
            run_case(ctx(), Case{.m = 1, .n = 9, .k = 16384, .quant = f, .bias = true, .options = {kernel, 1}}, seed++);
            run_case(ctx(), Case{.m = 3, .n = 5, .k = 16384, .quant = f, .residual = true, .options = {kernel, 1}},
                     seed++);
        }
        const auto plan = run_case(ctx(),
                                   Case{.m = 2,
                                        .n = 3,
                                        .k = (1u << 20) + 96,
                                        .quant = f,
                                        .bias = true,
                                        .options = {.kernel = MatmulKernel::Blocked, .force_splits = 1}},
                                   seed++);
        if (ctx().limits().max_loop_iterations != 0) {
            EXPECT_GT(plan.n_splits, 1u) << plan.describe();
        }
    }
}

TEST_F(MatmulQuant, ResidualMayBeTheOutput) {
    const std::uint32_t m = 7, n = 45, k = 96;
    const auto x = random_uniform(m * k, 6000), w = random_uniform(n * k, 6001), r = random_uniform(m * n, 6002);
    const QuantMatrix q = quantize(QuantFormat::Q4_0, w, n, k);
    const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
    const DeviceTensor vb = upload_values(ctx(), q.values);
    const DeviceTensor sb = upload_scales(ctx(), q.scales);
    const DeviceTensor yb = upload_tensor(ctx(), r, DType::F32, "Y = residual");
    // Scratch where the plan takes it (the separate epilogue of devices with 4 storage buffers).
    const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), m, n, k, DType::F32, {}, QuantFormat::Q4_0);
    const Buffer scratch =
        scratch_bytes > 0 ? ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch") : Buffer{};
    auto list = ctx().command_list();
    record_matmul(ctx(), *list,
                  MatmulArgs{.x = xb.range(),
                             .w = vb.range(),
                             .residual = yb.range(),
                             .y = yb.range(),
                             .scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                             .m = m,
                             .n = n,
                             .k = k,
                             .quant = QuantFormat::Q4_0,
                             .scales = sb.range()});
    ctx().submit(*list);
    std::vector<float> out(m * n);
    ctx().download(yb.buffer(), std::span(out));
    const ErrorStats e = compare_to_reference(out, reference::matmul(x, q.dequantized, {}, r, m, n, k));
    EXPECT_LT(e.max_rel, tolerance(DType::F32)) << describe(e);
}

TEST_F(MatmulQuant, BadArgumentsAreRefusedNamingTheTensor) {
    auto expect_error = [](auto&& fn, const std::string& needle) {
        try {
            fn();
            ADD_FAILURE() << "no error; expected '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    // X [8, 96], W q8_0 [5, 96]: 96 value bytes and 3 scales a row (one block a step, so
    // that K can be split).
    Buffer x = ctx().create_buffer(4 * 8 * 96, MemoryKind::Device, "x");
    Buffer v = ctx().create_buffer(5 * 96, MemoryKind::Device, "values");
    Buffer s = ctx().create_buffer(32, MemoryKind::Device, "scales");  // 30 bytes, padded to whole words
    Buffer y = ctx().create_buffer(4 * 8 * 5, MemoryKind::Device, "y");
    // Scratch only where the plan takes it (the separate epilogue of 4 storage buffers).
    const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), 8, 5, 96, DType::F32, {}, QuantFormat::Q8_0);
    Buffer scratch = scratch_bytes > 0 ? ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch") : Buffer{};
    auto list = ctx().command_list();
    const MatmulArgs ok{.x = whole(x),
                        .w = whole(v),
                        .y = whole(y),
                        .scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                        .m = 8,
                        .n = 5,
                        .k = 96,
                        .quant = QuantFormat::Q8_0,
                        .scales = BufferRange{.buffer = &s, .offset = 0, .size = 30}};
    EXPECT_NO_THROW(record_matmul(ctx(), *list, ok));
    MatmulArgs bad = ok;
    bad.k = 48;
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "[8, 5, 48] with q8_0 weights: k = 48 is not a multiple");
    expect_error([&] { (void)matmul_scratch_bytes(ctx(), 1, 5, 100, DType::F32, {}, QuantFormat::Q4_0); },
                 "k = 100 is not a multiple of the block size 32");
    bad = ok;
    bad.quant = QuantFormat::Q4_0;  // q4_0 rows are 48 bytes: the values range is twice too long
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W values [5, 48] bytes (q4_0) needs a range of 240 bytes");
    bad = ok;
    bad.scales = BufferRange{.buffer = &s, .offset = 0, .size = 16};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W scales [5, 3] f16 (q8_0) needs a range of 30 bytes");
    bad = ok;
    bad.scales = {};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W scales [5, 3] f16 (q8_0) has no buffer");
    bad = ok;
    bad.w = BufferRange{.buffer = &v, .offset = 2, .size = 5 * 96 - 4};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "W values");
    bad = ok;
    bad.bias = whole(y);
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "bias [5] f32");
    bad = ok;
    bad.weight_dtype = DType::BF16;
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "must be f32 or f16");
    bad = ok;
    bad.options = {.kernel = MatmulKernel::Tiled};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "tiled kernel does not read q8_0 weights");
    bad = ok;
    bad.options = {.kernel = MatmulKernel::Blocked, .force_splits = 2};
    expect_error([&] { record_matmul(ctx(), *list, bad); }, "needs a scratch range");
}

// A few cases of both kernels (where they fit) on a context with forced limits.
void run_forced(const char* spec, std::uint64_t seed) {
    SCOPED_TRACE(spec);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse(spec)));
    for (MatmulKernel kernel : {MatmulKernel::Auto, MatmulKernel::RowDot, MatmulKernel::Blocked}) {
        try {
            (void)plan_matmul(matmul_device(ctx), 29, 70, 96, DType::F32, {.kernel = kernel}, QuantFormat::Q8_0);
        } catch (const Error&) {
            continue;  // does not fit these limits; Auto never throws
        }
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            for (const Case& c : {Case{.m = 1, .n = 37, .k = 224, .bias = true},
                                  Case{.m = 29, .n = 70, .k = 96, .residual = true, .activation = Activation::GeluTanh},
                                  Case{.m = 67,
                                  .n = 5,
                                  .k = 1024,
                                  .bias_dtype = DType::F16,
                                  .bias = true,
                                  .activation = Activation::GeluErf}}) {
                Case with = c;
                with.quant = f;
                with.options.kernel = kernel;
                const MatmulPlan plan = run_case(ctx, with, seed++);
                EXPECT_LE(plan.workgroup_size, ctx.limits().workgroup_invocations) << plan.describe();
                EXPECT_EQ(plan.wide_loads, ctx.limits().int64) << plan.describe();
            }
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantForcedLimits, PhoneAndSmallDevicesStayRight) {
    run_forced("phone", 7000);
    run_forced("shared_memory=512,workgroup_invocations=16,workgroup_count=3", 7200);
}

TEST(MatmulQuantForcedLimits, FourStorageBuffersTakeTheSeparateEpilogue) {
    // Vulkan's minimum of 4 storage buffers per stage: the kernels write partial sums (X, the
    // values, the scales, P) and the reduce pass applies bias, activation and residual; the
    // integer dot-product path too (its quantized X and the partial sums share the scratch).
    run_forced("storage_buffers=4", 8100);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=4")));
    std::uint64_t seed = 8300;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (std::uint32_t splits : {0u, 3u}) {
            Case c{.m = 5,
                   .n = 70,
                   .k = 256,
                   .quant = f,
                   .bias_dtype = DType::F16,
                   .bias = true,
                   .residual = true,
                   .activation = Activation::GeluTanh};
            c.options.int8_activations = true;
            c.options.force_splits = splits;
            const MatmulPlan plan = run_case(ctx, c, seed++);
            EXPECT_TRUE(plan.separate_epilogue) << plan.describe();
            EXPECT_EQ(plan.int_dot, ctx.limits().integer_dot_product) << plan.describe();
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantForcedLimits, WithoutSubgroupOpsOrInt64TheFallbacksStayRight) {
    {
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_ops")));
        EXPECT_THROW((void)plan_matmul(matmul_device(ctx), 1, 64, 64, DType::F32, {.kernel = MatmulKernel::RowDot},
                                       QuantFormat::Q8_0),
                     Error);
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            const auto plan = run_case(ctx, Case{.m = 1, .n = 300, .k = 1024, .quant = f, .bias = true}, 7500);
            EXPECT_EQ(plan.kernel, MatmulKernel::Blocked);
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    run_forced("no_subgroup_ops", 7600);
    run_forced("no_int64", 7700);
}

TEST(MatmulQuantForcedLimits, WithoutSubgroupSizeControlDecodingTakesTheBlockedKernel) {
    // no_subgroup_size_control: the row-dot kernel (subgroup arithmetic over full subgroups of
    // the planned size) is never chosen, not even for a GPU's decoding, and forcing it is refused.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("no_subgroup_size_control")));
    EXPECT_FALSE(ctx.limits().subgroup_size_control);
    std::uint64_t seed = 7800;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (const bool cpu : {true, false}) {
            const MatmulDevice device{.limits = ctx.limits(), .cpu = cpu};
            for (std::uint32_t m : {1u, 4u}) {
                const auto plan = plan_matmul(device, m, 4096, 1024, DType::F16, {}, f);
                EXPECT_EQ(plan.kernel, MatmulKernel::Blocked) << plan.describe();
                EXPECT_EQ(plan.describe().find("rowdot"), std::string::npos) << plan.describe();
            }
            try {
                (void)plan_matmul(device, 1, 64, 64, DType::F32, {.kernel = MatmulKernel::RowDot}, f);
                ADD_FAILURE() << "a forced row-dot kernel was planned without subgroup size control";
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("full subgroups of a required size"), std::string::npos)
                    << e.what();
            }
        }
        // Decoding on the device as it is, against the dequantized-weight reference.
        for (std::uint32_t m : {1u, 3u}) {
            const auto plan =
                run_case(ctx, Case{.m = m, .n = 300, .k = 1024, .quant = f, .bias = true, .residual = true}, seed++);
            EXPECT_EQ(plan.kernel, MatmulKernel::Blocked) << plan.describe();
        }
    }
    run_forced("no_subgroup_size_control", 7900);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantForcedLimits, WeightsLargerThanTheStorageRangeAreBoundInRowRanges) {
    // 64 KiB bindings: W [700, 192] is 134 KB of q8_0 values (67 KB q4_0), and X and Y come
    // in row pieces too, like BLOOM's 250880 x 1024 lm_head against lavapipe's 128 MiB.
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffer_range=64K")));
    std::uint64_t seed = 8000;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        auto plan =
            run_case(ctx, Case{.m = 1, .n = 700, .k = 192, .quant = f, .bias = true, .pad = 1, .w_pad = 1}, seed++);
        EXPECT_LT(plan.cols_per_piece, 700u) << plan.describe();
        plan = run_case(ctx,
                        Case{.m = 129,
                             .n = 700,
                             .k = 192,
                             .quant = f,
                             .bias_dtype = DType::F16,
                             .bias = true,
                             .residual = true,
                             .activation = Activation::GeluTanh},
                        seed++);
        EXPECT_LT(plan.cols_per_piece, 700u) << plan.describe();
        EXPECT_LT(plan.rows_per_piece, 129u) << plan.describe();
        plan = run_case(ctx, Case{.m = 3, .n = 301, .k = 192, .quant = f, .options = {.force_splits = 4}}, seed++);
        EXPECT_LE(plan.scratch_bytes, ctx.limits().storage_buffer_range);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantPlans, KernelsSlicesAndPiecesFollowTheLimits) {
    const ComputeLimits gpu_limits{.shared_memory = 49152,
                                   .workgroup_invocations = 1024,
                                   .workgroup_size = {1024, 1024, 64},
                                   .workgroup_count = {65535, 65535, 65535},
                                   .storage_buffer_range = 1ull << 32,
                                   .storage_offset_alignment = 16,
                                   .storage_buffers = 8,
                                   .subgroup_size = 32,
                                   .subgroup_ops = true,
                                   .subgroup_size_control = true};
    const MatmulDevice gpu{.limits = gpu_limits};
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        EXPECT_EQ(plan_matmul(gpu, 1, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::RowDot);
        EXPECT_EQ(plan_matmul(gpu, 4, 4096, 1024, DType::F16, {}, f).block_m, 4u);
        EXPECT_EQ(plan_matmul(gpu, 5, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::Blocked);
        MatmulDevice no_subgroups = gpu;
        no_subgroups.limits.subgroup_ops = false;
        EXPECT_EQ(plan_matmul(no_subgroups, 1, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::Blocked);
        MatmulDevice no_size_control = gpu;
        no_size_control.limits.subgroup_size_control = false;
        EXPECT_EQ(plan_matmul(no_size_control, 1, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::Blocked);
        MatmulDevice cpu = gpu;
        cpu.cpu = true;
        cpu.limits.subgroup_size = 8;
        const auto cpu_decode = plan_matmul(cpu, 1, 4096, 1024, DType::F16, {}, f);
        EXPECT_EQ(cpu_decode.kernel, MatmulKernel::Blocked);
        EXPECT_EQ(cpu_decode.block_m, 1u);
        EXPECT_EQ(cpu_decode.blocks_per_step, 4u);
        EXPECT_EQ(plan_matmul(cpu, 1, 64, 96, DType::F16, {}, f).blocks_per_step, 1u);
        EXPECT_EQ(plan_matmul(cpu, 1, 64, 1056, DType::F16, {}, f).blocks_per_step, 1u);
        EXPECT_EQ(plan_matmul(cpu, 1, 64, 64, DType::F16, {}, f).blocks_per_step, 2u);
        EXPECT_EQ(plan_matmul(cpu, 2, 4096, 1024, DType::F16, {}, f).kernel, MatmulKernel::Blocked);
        EXPECT_THROW((void)plan_matmul(cpu, 1, 64, 64, DType::F16, {.kernel = MatmulKernel::Gemv}, f), Error);

        // A loop limit like llvmpipe's: every plan keeps each invocation under half of it.
        MatmulDevice limited = cpu;
        limited.limits.max_loop_iterations = 65535;
        for (std::uint32_t k : {16384u, 1u << 20, 1u << 24}) {
            for (MatmulKernel kernel : {MatmulKernel::RowDot, MatmulKernel::Blocked}) {
                for (std::uint32_t m : {1u, 300u}) {
                    const auto p = plan_matmul(limited, m, 4096, k, DType::F32, {.kernel = kernel}, f);
                    EXPECT_LE(p.loop_iterations, 65535u / 2) << p.describe();
                    EXPECT_GE(std::uint64_t{p.k_split} * p.n_splits, k);
                    EXPECT_EQ(p.k_split % 32, 0u);
                }
            }
        }
        // lm_head of BLOOM-560m on lavapipe: pieces of W rows under 128 MiB (245 MiB of q8_0
        // values; q4_0's 122.5 MiB fit one binding).
        MatmulDevice lavapipe = limited;
        lavapipe.limits.storage_buffer_range = 128ull << 20;
        const auto lm_head = plan_matmul(lavapipe, 1, 250880, 1024, DType::F16, {}, f);
        EXPECT_LE(std::uint64_t{lm_head.cols_per_piece} * quant_row_bytes(f, 1024), 128ull << 20);
        if (f == QuantFormat::Q8_0) {
            EXPECT_LT(lm_head.cols_per_piece, 250880u);
        }
    }
}

// Decode timings on the device (printed, never asserted): m = 1 on BLOOM-560m's shapes,
// q8_0 and q4_0 against the dense fp16 kernel. Set VKF_QUANT_TIMINGS=1 to run. Each figure
// is the fastest of 7 submissions of `reps` matmuls, as wall time and as the process's CPU
// time (on lavapipe the device is this process's threads: CPU time is what the kernels
// cost even when other work shares the cores).
struct Timing {
    double wall_ms, cpu_ms;
};

double cpu_now_ms() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

Timing best_ms(Context& ctx, const MatmulArgs& args, int reps) {
    Timing best{1e30, 1e30};
    for (int r = 0; r < 7; ++r) {
        auto list = ctx.command_list();
        for (int i = 0; i < reps; ++i) {
            record_matmul(ctx, *list, args);
        }
        const double c0 = cpu_now_ms();
        const auto t0 = std::chrono::steady_clock::now();
        ctx.submit(*list);
        const auto t1 = std::chrono::steady_clock::now();
        const double c1 = cpu_now_ms();
        best.wall_ms = std::min(best.wall_ms, std::chrono::duration<double, std::milli>(t1 - t0).count() / reps);
        best.cpu_ms = std::min(best.cpu_ms, (c1 - c0) / reps);
    }
    return best;
}

TEST_F(MatmulQuant, DecodeTimings) {
    if (std::getenv("VKF_QUANT_TIMINGS") == nullptr)
        GTEST_SKIP() << "set VKF_QUANT_TIMINGS=1 to time decoding";
    struct Shape {
        std::uint32_t n, k;
        int reps;
    };
    for (const Shape s : {Shape{4096, 1024, 20}, Shape{1024, 4096, 20}, Shape{250880, 1024, 2}}) {
        const auto x = random_uniform(s.k, 1);
        const auto block = random_uniform(std::size_t{64} * s.k, 2);
        const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
        const DeviceTensor yb = nan_tensor(ctx(), s.n, DType::F32, "Y");
        Timing dense{};
        {
            Buffer w = ctx().create_buffer(std::uint64_t{s.n} * s.k * 2, MemoryKind::Device, "W f16");
            upload_repeated(ctx(), w, block, DType::F16, std::uint64_t{s.n} * s.k);
            const MatmulArgs args{.x = xb.range(),
                                  .w = whole(w),
                                  .y = yb.range(),
                                  .m = 1,
                                  .n = s.n,
                                  .k = s.k,
                                  .weight_dtype = DType::F16};
            dense = best_ms(ctx(), args, s.reps);
            std::printf("n %6u k %5u  f16   wall %8.3f ms  cpu %8.3f ms                      (%s)\n", s.n, s.k,
                        dense.wall_ms, dense.cpu_ms,
                        plan_matmul(matmul_device(ctx()), 1, s.n, s.k, DType::F16).describe().c_str());
        }
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            // 64 random rows repeated: the kernels read every byte whatever the values.
            const QuantMatrix q = quantize(f, block, 64, s.k);
            auto [v, sc] = repeated_rows(ctx(), f, q, s.n, s.k);
            // The kernel Auto picks, and the blocked one (the fallback without subgroups).
            for (MatmulKernel kernel : {MatmulKernel::Auto, MatmulKernel::Blocked}) {
                const MatmulOptions options{.kernel = kernel};
                const MatmulArgs args{.x = xb.range(),
                                      .w = whole(v),
                                      .y = yb.range(),
                                      .m = 1,
                                      .n = s.n,
                                      .k = s.k,
                                      .weight_dtype = DType::F16,
                                      .options = options,
                                      .quant = f,
                                      .scales = whole(sc)};
                const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), 1, s.n, s.k, DType::F16, options, f);
                Buffer scratch;
                if (scratch_bytes > 0) {
                    scratch = ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch");
                }
                MatmulArgs with_scratch = args;
                with_scratch.scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{};
                const Timing t = best_ms(ctx(), with_scratch, s.reps);
                std::printf("n %6u k %5u  %s  wall %8.3f ms  cpu %8.3f ms  vs f16: wall %.2fx cpu %.2fx  (%s)\n", s.n,
                            s.k, to_string(f), t.wall_ms, t.cpu_ms, dense.wall_ms / t.wall_ms, dense.cpu_ms / t.cpu_ms,
                            plan_matmul(matmul_device(ctx()), 1, s.n, s.k, DType::F16, options, f).describe().c_str());
            }
        }
    }
}

// The integer dot-product path: opt-in (int8_activations), blocked kernel, on devices with
// shaderIntegerDotProduct (lavapipe 22.3 has it).
bool has_int_dot(Context& ctx) {
    return ctx.limits().integer_dot_product;
}

TEST_F(MatmulQuant, IntegerDotPathMatchesItsReferenceOverOddShapesEpiloguesAndSplits) {
    if (!has_int_dot(ctx()))
        GTEST_SKIP() << "no shaderIntegerDotProduct on this device";
    std::uint64_t seed = 9000;
    std::uint32_t step = 0;
    for (Case c : odd_shape_grid()) {
        c.options = {.force_splits = step % 5 == 2 ? 3u : 0u, .int8_activations = true};
        c.w_pad = step % 7 == 4 ? 1u : 0u;
        ++step;
        const MatmulPlan plan = run_case(ctx(), c, seed += 10);
        EXPECT_TRUE(plan.int_dot) << plan.describe();
        EXPECT_EQ(plan.kernel, MatmulKernel::Blocked) << plan.describe();
        EXPECT_GT(plan.scratch_bytes, 0u) << plan.describe();
        if (HasFatalFailure())
            return;
    }
    // Every epilogue with both formats and bias types, split-K, decode shapes, long K.
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (DType bt : {DType::F32, DType::F16}) {
            for (std::uint32_t a = 0; a < 3; ++a) {
                run_case(ctx(),
                         Case{.m = 1 + 6 * a,
                              .n = 37,
                              .k = 352,
                              .quant = f,
                              .bias_dtype = bt,
                              .bias = true,
                              .residual = a != 1,
                              .activation = activation_of(a),
                              .options = {.kernel = MatmulKernel::Blocked,
                                          .force_splits = a == 2 ? 3u : 0u,
                                          .int8_activations = true},
                              .pad = a == 1 ? 3u : 0u},
                         seed++);
            }
        }
        const auto plan = run_case(
            ctx(), Case{.m = 1, .n = 8, .k = 4096, .quant = f, .bias = true, .options = {.int8_activations = true}},
            seed++);
        EXPECT_GT(plan.n_splits, 1u) << plan.describe();
        run_case(ctx(),
                 Case{.m = 64,
                      .n = 300,
                      .k = 1024,
                      .quant = f,
                      .bias_dtype = DType::F16,
                      .bias = true,
                      .activation = Activation::GeluErf,
                      .options = {.int8_activations = true}},
                 seed++);
        run_case(ctx(),
                 Case{.m = 2,
                      .n = 3,
                      .k = (1u << 18) + 96,
                      .quant = f,
                      .bias = true,
                      .options = {.force_splits = 1, .int8_activations = true}},
                 seed++);
    }
}

TEST_F(MatmulQuant, IntegerDotPathIsOptInAndFallsBack) {
    // Not asked for: the float kernels, whatever the device has.
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        EXPECT_FALSE(plan_matmul(matmul_device(ctx()), 1, 64, 1024, DType::F32, {}, f).int_dot);
        EXPECT_FALSE(plan_matmul(matmul_device(ctx()), 64, 64, 1024, DType::F32, {}, f).int_dot);
        // Dense weights ignore it.
        EXPECT_FALSE(plan_matmul(matmul_device(ctx()), 1, 64, 1024, DType::F32, {.int8_activations = true}).int_dot);
        if (rowdot_runs(ctx())) {
            // A forced row-dot kernel has no integer path: the float one runs.
            const auto plan = run_case(ctx(),
                                       Case{.m = 1,
                                            .n = 37,
                                            .k = 224,
                                            .quant = f,
                                            .bias = true,
                                            .options = {.kernel = MatmulKernel::RowDot, .int8_activations = true}},
                                       9500);
            EXPECT_FALSE(plan.int_dot);
            EXPECT_EQ(plan.kernel, MatmulKernel::RowDot);
        }
    }
    // no_integer_dot: asked for, but the float blocked kernel runs, against the
    // dequantized-weight reference at the fp32 tolerance (run_case picks it by plan.int_dot).
    MessageSink sink;
    Context no_dot(test_options(sink, LimitOverrides::parse("no_integer_dot")));
    EXPECT_FALSE(no_dot.limits().integer_dot_product);
    if (has_int_dot(ctx())) {
        EXPECT_TRUE(no_dot.limits().forced);
    }
    std::uint64_t seed = 9600;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (const Case& c : {Case{.m = 1, .n = 37, .k = 224, .bias = true},
                              Case{.m = 29, .n = 70, .k = 96, .residual = true, .activation = Activation::GeluTanh},
                              Case{.m = 5, .n = 19, .k = 352, .bias = true, .options = {.force_splits = 3}}}) {
            Case with = c;
            with.quant = f;
            with.options.int8_activations = true;
            const MatmulPlan plan = run_case(no_dot, with, seed++);
            EXPECT_FALSE(plan.int_dot) << plan.describe();
            EXPECT_EQ(plan.kernel, MatmulKernel::Blocked) << plan.describe();
            EXPECT_EQ(plan.xq_scratch_bytes, 0u);
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(MatmulQuantForcedLimits, IntegerDotPathUnderPhoneLimitsAndASmallStorageRange) {
    std::uint64_t seed = 9700;
    for (const char* spec : {"phone", "shared_memory=512,workgroup_invocations=16,workgroup_count=3", "no_int64",
                             "storage_buffer_range=64K"}) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        if (!has_int_dot(ctx))
            GTEST_SKIP() << "no shaderIntegerDotProduct on this device";
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            for (const Case& c :
                 {Case{.m = 1, .n = 37, .k = 224, .bias = true, .pad = 1},
                  Case{.m = 29, .n = 70, .k = 96, .residual = true, .activation = Activation::GeluTanh, .w_pad = 1},
                  Case{.m = 129,
                  .n = 700,
                  .k = 192,
                  .bias_dtype = DType::F16,
                  .bias = true,
                  .residual = true,
                  .activation = Activation::GeluErf},
                  Case{.m = 3, .n = 301, .k = 192, .options = {.force_splits = 4}}}) {
                Case with = c;
                with.quant = f;
                with.options.int8_activations = true;
                const MatmulPlan plan = run_case(ctx, with, seed++);
                EXPECT_TRUE(plan.int_dot) << plan.describe();
                EXPECT_LE(plan.workgroup_size, ctx.limits().workgroup_invocations) << plan.describe();
                if (std::string(spec) == "storage_buffer_range=64K" && c.m == 129) {
                    EXPECT_LT(plan.rows_per_piece, 129u) << plan.describe();  // X quantized piece by piece
                    EXPECT_LT(plan.cols_per_piece, 700u) << plan.describe();
                }
            }
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

// What rounding X to int8 costs: the integer path against the reference on the exactly
// dequantized weights and fp32 X (printed; bounded loosely, a few times what was measured).
TEST_F(MatmulQuant, IntegerDotPathErrorAgainstTheDequantizedWeightReference) {
    if (!has_int_dot(ctx()))
        GTEST_SKIP() << "no shaderIntegerDotProduct on this device";
    std::uint64_t seed = 9800;
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
        for (const auto [m, n, k] : {std::array<std::uint32_t, 3>{1, 1024, 1024}, {1, 1024, 4096}, {64, 256, 1024}}) {
            const auto x = random_uniform(std::size_t{m} * k, seed++, -1.0f, 1.0f);
            const auto w = random_uniform(std::size_t{n} * k, seed++, -1.0f, 1.0f);
            const QuantMatrix q = quantize(f, w, n, k);
            const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
            const DeviceTensor vb = upload_values(ctx(), q.values);
            const DeviceTensor sb = upload_scales(ctx(), q.scales);
            const DeviceTensor yb = nan_tensor(ctx(), std::uint64_t{m} * n, DType::F32, "Y");
            const MatmulOptions options{.int8_activations = true};
            const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), m, n, k, DType::F32, options, f);
            Buffer scratch = ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch");
            poison(ctx(), scratch);
            auto list = ctx().command_list();
            record_matmul(ctx(), *list,
                          MatmulArgs{.x = xb.range(),
                                     .w = vb.range(),
                                     .y = yb.range(),
                                     .scratch = whole(scratch),
                                     .m = m,
                                     .n = n,
                                     .k = k,
                                     .options = options,
                                     .quant = f,
                                     .scales = sb.range()});
            ctx().submit(*list);
            std::vector<float> out(std::size_t{m} * n);
            ctx().download(yb.buffer(), std::span(out));
            const ErrorStats e = compare_to_reference(out, reference::matmul(x, q.dequantized, {}, {}, m, n, k));
            std::printf("int8 X vs fp32 X, %s weights, m %u n %u k %u: %s\n", to_string(f), m, n, k,
                        describe(e).c_str());
            EXPECT_EQ(e.first_nonfinite, SIZE_MAX);
            EXPECT_LT(e.rel_l2, 3e-2) << describe(e);
        }
    }
}

// Timings of the integer path against the float quantized kernels (printed, never asserted;
// VKF_QUANT_TIMINGS=1 to run): m = 1 and m = 64 on BLOOM-560m's MLP shapes. The integer
// figures include the pre-pass quantizing X.
TEST_F(MatmulQuant, IntegerDotTimings) {
    if (std::getenv("VKF_QUANT_TIMINGS") == nullptr)
        GTEST_SKIP() << "set VKF_QUANT_TIMINGS=1 to time the integer path";
    if (!has_int_dot(ctx()))
        GTEST_SKIP() << "no shaderIntegerDotProduct on this device";
    struct Shape {
        std::uint32_t m, n, k;
        int reps;
    };
    for (const Shape s :
         {Shape{1, 4096, 1024, 20}, Shape{1, 1024, 4096, 20}, Shape{64, 4096, 1024, 2}, Shape{64, 1024, 4096, 2}}) {
        const auto x = random_uniform(std::size_t{s.m} * s.k, 1);
        const auto block = random_uniform(std::size_t{64} * s.k, 2);
        const DeviceTensor xb = upload_tensor(ctx(), x, DType::F32, "X");
        const DeviceTensor yb = nan_tensor(ctx(), std::uint64_t{s.m} * s.n, DType::F32, "Y");
        for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            const QuantMatrix q = quantize(f, block, 64, s.k);
            auto [v, sc] = repeated_rows(ctx(), f, q, s.n, s.k);
            Timing float_t{};
            for (const bool int8 : {false, true}) {
                const MatmulOptions options{.int8_activations = int8};
                const std::uint64_t scratch_bytes = matmul_scratch_bytes(ctx(), s.m, s.n, s.k, DType::F16, options, f);
                Buffer scratch;
                if (scratch_bytes > 0) {
                    scratch = ctx().create_buffer(scratch_bytes, MemoryKind::Device, "scratch");
                }
                const MatmulArgs args{.x = xb.range(),
                                      .w = whole(v),
                                      .y = yb.range(),
                                      .scratch = scratch_bytes > 0 ? whole(scratch) : BufferRange{},
                                      .m = s.m,
                                      .n = s.n,
                                      .k = s.k,
                                      .weight_dtype = DType::F16,
                                      .options = options,
                                      .quant = f,
                                      .scales = whole(sc)};
                const Timing t = best_ms(ctx(), args, s.reps);
                if (!int8) {
                    float_t = t;
                }
                std::printf(
                    "m %3u n %5u k %5u  %s %s  wall %8.3f ms  cpu %8.3f ms  vs float: wall %.2fx cpu %.2fx  (%s)\n",
                    s.m, s.n, s.k, to_string(f), int8 ? "int8 X" : "fp32 X", t.wall_ms, t.cpu_ms,
                    float_t.wall_ms / t.wall_ms, float_t.cpu_ms / t.cpu_ms,
                    plan_matmul(matmul_device(ctx()), s.m, s.n, s.k, DType::F16, options, f).describe().c_str());
            }
        }
    }
}

}  // namespace
}  // namespace vkf::test
