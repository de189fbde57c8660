// Pooling (mean and CLS, plain and L2-normalized) against the double-precision reference:
// seeded random rows over odd and prime shapes, one row, widths below, at and above one
// workgroup, rows of large magnitude, an all-zero row (normalization's eps), tensors at
// unaligned offsets. Outputs are poisoned (NaN) before every run.

#include "host/ops/device_tensor.hpp"
#include "host/ops/pooling.hpp"
#include "host/reference/pooling.hpp"
#include "host/util/compare.hpp"
#include "host/util/random.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cmath>

namespace vkf::test {
namespace {

// fp32 sums over up to a few hundred rows against double.
constexpr double kTolerance = 1e-5;

struct Case {
    std::uint32_t rows, dim;
    float scale = 1.0f;
    std::uint32_t pad = 0;  // elements in front of every tensor in its buffer
};

std::vector<float> run(Context& ctx, const std::vector<float>& x, const Case& c, Pooling pooling, bool normalize) {
    const DeviceTensor xb = upload_tensor(ctx, x, DType::F32, "x", c.pad);
    const DeviceTensor yb = nan_tensor(ctx, c.dim, DType::F32, "y", c.pad);
    auto list = ctx.command_list();
    record_pooling(ctx, *list,
                   PoolingArgs{.x = xb.range(),
                               .y = yb.range(),
                               .rows = c.rows,
                               .dim = c.dim,
                               .pooling = pooling,
                               .normalize = normalize});
    list->finish();
    ctx.submit(*list);
    return download_tensor(ctx, yb);
}

class Pooling_ : public VulkanTest {};

TEST_F(Pooling_, MatchesTheReference) {
    const Case cases[] = {{1, 1},   {1, 96},        {7, 33},          {33, 256},          {130, 257},
                          {5, 600}, {17, 64, 1e4f}, {9, 80, 1.0f, 3}, {2, 1000, 0.01f, 1}};
    std::uint64_t seed = 1;
    double worst = 0.0;
    for (const Case& c : cases) {
        std::vector<float> x = random_uniform(std::size_t{c.rows} * c.dim, seed++, -c.scale, c.scale);
        for (std::size_t i = 0; i < x.size(); ++i) {
            x[i] += 0.1f * c.scale * static_cast<float>(i % 3);  // a mean that is not zero
        }
        for (const Pooling p : {Pooling::Mean, Pooling::Cls}) {
            for (const bool normalize : {false, true}) {
                SCOPED_TRACE("rows " + std::to_string(c.rows) + " dim " + std::to_string(c.dim) + " pad " +
                             std::to_string(c.pad) + " " + std::string(pooling_name(p)) +
                             (normalize ? " normalized" : ""));
                const std::vector<float> gpu = run(ctx(), x, c, p, normalize);
                const ErrorStats e = compare_to_reference(gpu, reference::pool(x, c.rows, c.dim, p, normalize));
                EXPECT_LT(e.max_rel, kTolerance) << describe(e);
                worst = std::max(worst, e.max_rel);
            }
        }
    }
    std::printf("pooling: largest relative error %.3g\n", worst);
}

// A zero embedding normalizes to zeros (x / max(|x|, eps)), not NaN.
TEST_F(Pooling_, ZeroRowNormalizesToZero) {
    const Case c{3, 40};
    const std::vector<float> x(std::size_t{c.rows} * c.dim, 0.0f);
    for (const Pooling p : {Pooling::Mean, Pooling::Cls}) {
        for (const float v : run(ctx(), x, c, p, true)) {
            EXPECT_EQ(v, 0.0f);
        }
    }
}

// CLS reads the first row only: the others may hold anything.
TEST_F(Pooling_, ClsIgnoresLaterRows) {
    const Case c{4, 50};
    std::vector<float> x = random_uniform(std::size_t{c.rows} * c.dim, 9);
    for (std::size_t i = c.dim; i < x.size(); ++i) {
        x[i] = NAN;
    }
    const std::vector<float> gpu = run(ctx(), x, c, Pooling::Cls, false);
    for (std::uint32_t i = 0; i < c.dim; ++i) {
        EXPECT_EQ(gpu[i], x[i]);
    }
}

TEST_F(Pooling_, RefusesBadArguments) {
    const DeviceTensor x = upload_tensor(ctx(), random_uniform(12, 1), DType::F32, "x");
    const DeviceTensor y = nan_tensor(ctx(), 4, DType::F32, "y");
    auto list = ctx().command_list();
    const auto message = [&](PoolingArgs args) { return error_message([&] { record_pooling(ctx(), *list, args); }); };
    const PoolingArgs ok{.x = x.range(), .y = y.range(), .rows = 3, .dim = 4};
    PoolingArgs none = ok;
    none.pooling = Pooling::None;
    EXPECT_NE(message(none).find("only mean and cls"), std::string::npos);
    PoolingArgs rows = ok;
    rows.rows = 4;
    EXPECT_NE(message(rows).find("x"), std::string::npos);
    PoolingArgs zero = ok;
    zero.dim = 0;
    EXPECT_NE(message(zero).find("positive"), std::string::npos);
}

}  // namespace
}  // namespace vkf::test
