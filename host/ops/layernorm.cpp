#include "host/ops/layernorm.hpp"
#include "host/util/math.hpp"

#include "base/error.hpp"
#include "host/ops/tensor_binding.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace vkf {

namespace {

constexpr std::uint32_t kMaxWorkgroup = 256;

// Three passes over the row plus two tree reductions, no loop unrolled.
std::uint64_t loop_iterations(std::uint32_t dim, std::uint32_t wg) {
    return 3 * ceil_div(dim, wg) + 2 * std::bit_width(wg) + 8;
}

}  // namespace

std::uint32_t layernorm_workgroup_size(const ComputeLimits& limits, std::uint32_t dim) {
    const std::uint32_t cap = std::bit_floor(
        std::min({kMaxWorkgroup, limits.workgroup_invocations, limits.workgroup_size[0], limits.shared_memory / 4}));
    std::uint32_t wg = std::min(cap, std::bit_ceil(std::max<std::uint32_t>(dim, 1)));
    if (wg == 0) {
        throw Error("layernorm: no workgroup fits " + fmt::to_string(limits.shared_memory) + " bytes of shared memory");
    }
    if (limits.max_loop_iterations != 0) {
        const std::uint64_t budget = limits.max_loop_iterations / 2;
        while (loop_iterations(dim, wg) > budget &&
               wg < std::bit_floor(std::min(limits.workgroup_invocations, limits.workgroup_size[0]))) {
            wg *= 2;
        }
        if (loop_iterations(dim, wg) > budget || wg * 4 > limits.shared_memory) {
            throw Error("layernorm: rows of " + fmt::to_string(dim) +
                        " elements need more loop iterations per "
                        "invocation than this driver runs (" +
                        fmt::to_string(limits.max_loop_iterations) + ")");
        }
    }
    return wg;
}

void record_layernorm(Context& ctx, CommandList& list, const LayerNormArgs& a) {
    const ComputeLimits& limits = ctx.limits();
    const bool f16 = a.weight_dtype == DType::F16;
    const auto wsize = static_cast<std::uint32_t>(element_size(a.weight_dtype));
    const char* wtype = to_string(a.weight_dtype);
    const bool has_bias = a.bias.buffer != nullptr;
    const char* op = a.rms ? "rmsnorm" : "layernorm";
    const std::uint32_t x_stride = a.x_stride == 0 ? a.dim : a.x_stride;
    const std::uint32_t y_stride = a.y_stride == 0 ? a.dim : a.y_stride;
    if (x_stride < a.dim || y_stride < a.dim) {
        throw Error(std::string(op) + ": row strides " + fmt::to_string(x_stride) + " (x) and " +
                    fmt::to_string(y_stride) + " (y) must be at least dim " + fmt::to_string(a.dim));
    }
    // A strided view of `rows` rows: the last row needs only dim elements.
    const auto view = [&](std::uint64_t rows, std::uint32_t stride) {
        return rows == 0 ? 0 : (rows - 1) * stride + a.dim;
    };
    check_tensor(a.x, view(a.rows, x_stride), 4, op, "x", shape_text({a.rows, a.dim}, "f32"));
    check_tensor(a.y, view(a.rows, y_stride), 4, op, "y", shape_text({a.rows, a.dim}, "f32"));
    check_tensor(a.weight, a.dim, wsize, op, "weight", shape_text({a.dim}, wtype));
    if (has_bias) {
        if (a.rms) {
            throw Error("rmsnorm: RMSNorm has no bias");
        }
        check_tensor(a.bias, a.dim, wsize, op, "bias", shape_text({a.dim}, wtype));
    }
    if (!(a.eps > 0.0f)) {
        throw Error(std::string(op) + ": eps must be positive, got " + fmt::format("{:f}", a.eps));
    }
    const std::uint32_t wg = layernorm_workgroup_size(limits, a.dim);
    const Pipeline& pipeline = ctx.pipeline(PipelineDesc{.code = &shaders::variant("layernorm", {{"WEIGHTS_F16", f16}}),
                                                         .workgroup_size = {wg, 1, 1},
                                                         .constants = {{VKF_LAYERNORM_SPEC_WG, wg}},
                                                         .push_constant_layout = LayerNormPush::layout,
                                                         .binding_count = 4,
                                                         .shared_memory_bytes = 4 * wg});
    const std::uint64_t max_rows = max_bound_elements(limits, 4) / std::max(x_stride, y_stride);
    if (max_rows == 0) {
        throw Error(std::string(op) + ": one row of " + fmt::to_string(std::max(x_stride, y_stride)) +
                    " elements exceeds maxStorageBufferRange");
    }
    const ElementBinding weight = bind_elements(limits, a.weight, 0, a.dim, wsize, op, "weight");
    const ElementBinding bias = has_bias ? bind_elements(limits, a.bias, 0, a.dim, wsize, op, "bias") : weight;
    std::uint32_t flags = has_bias ? VKF_LAYERNORM_FLAG_BIAS : 0;
    flags |= a.rms ? VKF_LAYERNORM_FLAG_RMS : 0;
    for (std::uint64_t r0 = 0; r0 < a.rows; r0 += max_rows) {
        const auto rc = static_cast<std::uint32_t>(std::min<std::uint64_t>(max_rows, a.rows - r0));
        const ElementBinding x = bind_elements(limits, a.x, r0 * x_stride, view(rc, x_stride), 4, op, "x");
        const ElementBinding y = bind_elements(limits, a.y, r0 * y_stride, view(rc, y_stride), 4, op, "y");
        const LayerNormPush push{.rows = rc,
                                 .dim = a.dim,
                                 .x_base = x.base,
                                 .y_base = y.base,
                                 .weight_base = weight.base,
                                 .bias_base = has_bias ? bias.base : 0,
                                 .flags = flags,
                                 .eps = a.eps,
                                 .x_stride = x_stride,
                                 .y_stride = y_stride};
        const Binding bindings[] = {{x.range, Access::Read},
                                    {weight.range, Access::Read},
                                    {bias.range, Access::Read},
                                    {y.range, Access::Write}};
        list.dispatch(Dispatch{.pipeline = &pipeline,
                               .bindings = bindings,
                               .push_constants = push_bytes(push),
                               .groups = {rc, 1, 1},
                               .label = op});
    }
}

}  // namespace vkf
