// LayerNorm against the double-precision CPU reference: seeded random rows (including rows
// whose mean is far larger than their spread, where a one-pass variance would cancel),
// odd and prime widths, with and without bias (MPT's no_bias), fp32 and fp16 weights,
// in place, at unaligned offsets, in row pieces and under forced smaller limits.
// Outputs are poisoned (NaN) before every run.

#include "host/ops/device_tensor.hpp"
#include "host/ops/layernorm.hpp"
#include "host/reference/ops.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>

namespace vkf::test {
namespace {

struct Case {
    std::uint32_t rows, dim;
    DType dtype = DType::F32;
    bool bias = true;
    float eps = 1e-5f;
    float offset = 0.0f;    // added to every input: the mean dominates the spread
    std::uint32_t pad = 0;  // elements in front of every tensor in its buffer
    bool in_place = false;
};

std::string name(const Case& c) {
    return "rows" + std::to_string(c.rows) + " dim" + std::to_string(c.dim) + " " + to_string(c.dtype) +
           (c.bias ? " bias" : " no_bias") + " eps" + std::to_string(c.eps) + " offset" + std::to_string(c.offset) +
           (c.pad ? " pad" + std::to_string(c.pad) : "") + (c.in_place ? " in-place" : "");
}

std::uint32_t run_case(Context& ctx, const Case& c, std::uint64_t seed) {
    SCOPED_TRACE(name(c));
    auto x = random_uniform(std::size_t{c.rows} * c.dim, seed, -1.0f, 1.0f);
    // Rows of different scales and means.
    for (std::uint32_t r = 0; r < c.rows; ++r) {
        const float scale = 0.1f + static_cast<float>(r % 5);
        for (std::uint32_t i = 0; i < c.dim; ++i) {
            x[std::size_t{r} * c.dim + i] = x[std::size_t{r} * c.dim + i] * scale + c.offset;
        }
    }
    auto weight = random_uniform(c.dim, seed + 1, 0.5f, 1.5f);
    auto bias = c.bias ? random_uniform(c.dim, seed + 2, -0.5f, 0.5f) : std::vector<float>{};
    // The reference sees exactly what the GPU reads.
    weight = rounded_to(c.dtype, weight);
    bias = rounded_to(c.dtype, bias);
    const DeviceTensor xb = upload_tensor(ctx, x, DType::F32, "x", c.pad);
    const DeviceTensor wb = upload_tensor(ctx, weight, c.dtype, "weight", c.pad);
    std::optional<DeviceTensor> bb;
    if (c.bias)
        bb = upload_tensor(ctx, bias, c.dtype, "bias", c.pad);
    std::optional<DeviceTensor> yb;
    if (!c.in_place) {
        yb = nan_tensor(ctx, x.size(), DType::F32, "y", c.pad + 1);
    }
    const DeviceTensor& out = c.in_place ? xb : *yb;
    auto list = ctx.command_list();
    record_layernorm(ctx, *list,
                     LayerNormArgs{.x = xb.range(),
                                   .weight = wb.range(),
                                   .bias = bb ? bb->range() : BufferRange{},
                                   .y = out.range(),
                                   .rows = c.rows,
                                   .dim = c.dim,
                                   .eps = c.eps,
                                   .weight_dtype = c.dtype});
    ctx.submit(*list);
    const std::vector<float> y = download_tensor(ctx, out);
    const auto ref = reference::layernorm(x, weight, bias, c.rows, c.dim, c.eps);
    const ErrorStats e = compare_to_reference(y, ref);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, 1e-5) << describe(e);
    EXPECT_LT(e.rel_l2, 1e-5) << describe(e);
    return layernorm_workgroup_size(ctx.limits(), c.dim);
}

class LayerNorm_ : public VulkanTest {};

TEST_F(LayerNorm_, MatchesTheReferenceOverOddAndPrimeWidths) {
    const std::uint32_t rows[] = {1, 2, 3, 7, 64, 129};
    const std::uint32_t dims[] = {1, 2, 7, 64, 100, 255, 256, 257, 1000, 1024, 4096, 5003};
    std::uint64_t seed = 100;
    std::uint32_t step = 0;
    for (std::uint32_t d : dims) {
        for (std::uint32_t i = 0; i < 3; ++i, ++step) {
            const std::uint32_t r = rows[(step * 5 + i) % std::size(rows)];
            run_case(ctx(),
                     Case{.rows = r,
                          .dim = d,
                          .dtype = step % 2 == 0 ? DType::F32 : DType::F16,
                          .bias = step % 3 != 1,
                          .eps = step % 4 == 3 ? 1e-3f : 1e-5f,
                          .offset = step % 5 == 2 ? 3.0f : 0.0f},
                     seed += 10);
            if (HasFatalFailure())
                return;
        }
    }
}

TEST_F(LayerNorm_, RowsWithALargeMeanKeepTheirVariance) {
    // x = 20 + small noise: E[x^2] - E[x]^2 in fp32 would lose most digits of the variance.
    std::uint64_t seed = 200;
    for (DType t : {DType::F32, DType::F16}) {
        run_case(ctx(), Case{.rows = 9, .dim = 1024, .dtype = t, .offset = 20.0f}, seed++);
        run_case(ctx(), Case{.rows = 4, .dim = 333, .dtype = t, .bias = false, .offset = -20.0f}, seed++);
    }
}

TEST_F(LayerNorm_, InPlaceAndUnalignedTensors) {
    std::uint64_t seed = 300;
    for (DType t : {DType::F32, DType::F16}) {
        run_case(ctx(), Case{.rows = 5, .dim = 97, .dtype = t, .in_place = true}, seed++);
        run_case(ctx(), Case{.rows = 6, .dim = 1025, .dtype = t, .pad = 3}, seed++);
        run_case(ctx(), Case{.rows = 3, .dim = 64, .dtype = t, .bias = false, .pad = 1, .in_place = true}, seed++);
    }
}

TEST_F(LayerNorm_, BadArgumentsAreRefusedNamingTheTensor) {
    Buffer x = ctx().create_buffer(4 * 3 * 10, MemoryKind::Device, "x");
    Buffer w = ctx().create_buffer(4 * 10, MemoryKind::Device, "w");
    auto list = ctx().command_list();
    const LayerNormArgs ok{.x = whole(x), .weight = whole(w), .y = whole(x), .rows = 3, .dim = 10};
    auto expect_error = [&](LayerNormArgs a, const std::string& needle) {
        try {
            record_layernorm(ctx(), *list, a);
            ADD_FAILURE() << "no error; expected '" << needle << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    LayerNormArgs bad = ok;
    bad.dim = 11;
    expect_error(bad, "x [3, 11] f32");
    bad = ok;
    bad.weight_dtype = DType::F16;
    expect_error(bad, "weight [10] f16 needs a range of 20 bytes");
    bad = ok;
    bad.eps = 0.0f;
    expect_error(bad, "eps");
}

TEST(LayerNormForcedLimits, SmallWorkgroupsAndRowPiecesStayRight) {
    const char* specs[] = {"phone", "shared_memory=8192,workgroup_invocations=64",
                           "workgroup_invocations=16,storage_buffer_range=64K,workgroup_count=5"};
    std::uint64_t seed = 400;
    for (const char* spec : specs) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        for (DType t : {DType::F32, DType::F16}) {
            const std::uint32_t wg = run_case(ctx, Case{.rows = 70, .dim = 1031, .dtype = t, .pad = 1}, seed++);
            EXPECT_LE(wg, ctx.limits().workgroup_invocations);
            run_case(ctx, Case{.rows = 3, .dim = 40, .dtype = t, .bias = false}, seed++);
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

TEST(LayerNormPlans, WorkgroupsGrowForLongRowsUnderALoopLimit) {
    ComputeLimits limits{.shared_memory = 32768,
                         .workgroup_invocations = 1024,
                         .workgroup_size = {1024, 1024, 64},
                         .workgroup_count = {65535, 65535, 65535},
                         .storage_buffer_range = 1ull << 27,
                         .storage_offset_alignment = 16,
                         .max_loop_iterations = 65535};
    EXPECT_EQ(layernorm_workgroup_size(limits, 100), 128u);
    EXPECT_EQ(layernorm_workgroup_size(limits, 1024), 256u);
    // 3 passes of 4M / 256 iterations would pass the limit: wider workgroups instead.
    EXPECT_GT(layernorm_workgroup_size(limits, 4u << 20), 256u);
    limits.workgroup_invocations = 64;
    limits.workgroup_size = {64, 64, 64};
    EXPECT_THROW((void)layernorm_workgroup_size(limits, 4u << 20), Error);
}

// RMSNorm (Baichuan) and strided rows (MPT's qk_ln normalizes the Q and K columns of the
// fused QKV output in place), against the double-precision references.
void run_strided(Context& ctx, bool rms, std::uint32_t rows, std::uint32_t dim, std::uint32_t x_stride,
                 std::uint32_t y_stride, DType dtype, bool bias, std::uint64_t seed) {
    SCOPED_TRACE(std::string(rms ? "rmsnorm" : "layernorm") + " rows" + std::to_string(rows) + " dim" +
                 std::to_string(dim) + " strides " + std::to_string(x_stride) + "," + std::to_string(y_stride) + " " +
                 to_string(dtype) + (bias ? " bias" : ""));
    const std::size_t x_count = std::size_t{rows - 1} * x_stride + dim;
    const std::size_t y_count = std::size_t{rows - 1} * y_stride + dim;
    auto x = random_uniform(x_count, seed, -2.0f, 2.0f);
    for (std::size_t i = 0; i < x_count; i += 3) {
        x[i] += 0.75f;  // a mean RMSNorm must not subtract
    }
    const auto weight = rounded_to(dtype, random_uniform(dim, seed + 1, 0.5f, 1.5f));
    const auto bias_values =
        bias ? rounded_to(dtype, random_uniform(dim, seed + 2, -0.5f, 0.5f)) : std::vector<float>{};
    const DeviceTensor xb = upload_tensor(ctx, x, DType::F32, "x", 3);
    const DeviceTensor wb = upload_tensor(ctx, weight, dtype, "weight", 1);
    std::optional<DeviceTensor> bb;
    if (bias)
        bb = upload_tensor(ctx, bias_values, dtype, "bias");
    const DeviceTensor yb = nan_tensor(ctx, y_count, DType::F32, "y", 5);
    auto list = ctx.command_list();
    record_layernorm(ctx, *list,
                     LayerNormArgs{.x = xb.range(),
                                   .weight = wb.range(),
                                   .bias = bb ? bb->range() : BufferRange{},
                                   .y = yb.range(),
                                   .rows = rows,
                                   .dim = dim,
                                   .eps = 1e-6f,
                                   .weight_dtype = dtype,
                                   .rms = rms,
                                   .x_stride = x_stride,
                                   .y_stride = y_stride});
    ctx.submit(*list);
    const std::vector<float> y = download_tensor(ctx, yb);
    std::vector<double> dense(std::size_t{rows} * dim);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t i = 0; i < dim; ++i) {
            dense[r * dim + i] = x[r * x_stride + i];
        }
    }
    const auto ref = rms ? reference::rmsnorm(dense, weight, rows, dim, 1e-6)
                         : reference::layernorm(dense, weight, bias_values, rows, dim, 1e-6);
    std::vector<float> got(ref.size());
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t i = 0; i < dim; ++i) {
            got[r * dim + i] = y[r * y_stride + i];
        }
        // The gaps between strided rows are not written: they keep their poison.
        for (std::size_t i = dim; r + 1 < rows && i < y_stride; ++i) {
            ASSERT_TRUE(std::isnan(y[r * y_stride + i])) << "row " << r << " gap element " << i << " was written";
        }
    }
    const ErrorStats e = compare_to_reference(got, ref);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, 1e-5) << describe(e);
}

TEST_F(LayerNorm_, RmsNormAndStridedRowsMatchTheReference) {
    std::uint64_t seed = 900;
    for (DType dtype : {DType::F32, DType::F16}) {
        for (std::uint32_t dim : {1u, 5u, 64u, 113u, 1000u, 5120u}) {
            run_strided(ctx(), true, 7, dim, dim, dim, dtype, false, seed++);
            run_strided(ctx(), true, 3, dim, 3 * dim + 1, 2 * dim, dtype, false, seed++);
            run_strided(ctx(), false, 5, dim, 3 * dim, 3 * dim, dtype, true, seed++);
        }
    }
}

TEST_F(LayerNorm_, RefusesAnRmsNormBiasAndShortStrides) {
    const DeviceTensor x = upload_tensor(ctx(), std::vector<float>(64, 1.0f), DType::F32, "x");
    const DeviceTensor w = upload_tensor(ctx(), std::vector<float>(8, 1.0f), DType::F32, "w");
    auto list = ctx().command_list();
    LayerNormArgs args{.x = x.range(), .weight = w.range(), .bias = w.range(), .y = x.range(), .rows = 8, .dim = 8};
    args.rms = true;
    EXPECT_NE(error_message([&] { record_layernorm(ctx(), *list, args); }).find("RMSNorm has no bias"),
              std::string::npos);
    args.rms = false;
    args.bias = {};
    args.x_stride = 7;
    EXPECT_NE(error_message([&] { record_layernorm(ctx(), *list, args); }).find("must be at least dim 8"),
              std::string::npos);
}

}  // namespace
}  // namespace vkf::test
