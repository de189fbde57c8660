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
#include "tests/support/vulkan_test.hpp"

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

}  // namespace
}  // namespace vkf::test
