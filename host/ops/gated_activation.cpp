#include "host/ops/gated_activation.hpp"

#include "base/error.hpp"
#include "host/ops/tensor_binding.hpp"
#include "host/util/math.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace vkf {

namespace {

const char* variant_define(Activation activation) {
    switch (activation) {
        case Activation::Silu:
            return "SILU";
        case Activation::GeluErf:
            return "GELU_ERF";
        case Activation::GeluTanh:
            return "GELU_TANH";
        case Activation::None:
            break;
    }
    throw Error("gated_activation: no activation given (Activation::None)");
}

// Elements a strided view of `rows` rows spans: the last row needs only `cols`.
std::uint64_t view_elements(std::uint32_t rows, std::uint32_t cols, std::uint32_t stride) {
    return rows == 0 ? 0 : std::uint64_t{rows - 1} * stride + cols;
}

ElementBinding bind_view(const ComputeLimits& limits, const BufferRange& range, std::uint32_t rows, std::uint32_t cols,
                         std::uint32_t stride, const char* name) {
    const std::uint64_t need = view_elements(rows, cols, stride);
    if (range.buffer == nullptr || range.size < need * 4) {
        throw Error(std::string("gated_activation: ") + name + " needs " + fmt::to_string(need) + " fp32 elements (" +
                    fmt::to_string(rows) + " rows of " + fmt::to_string(cols) + ", stride " + fmt::to_string(stride) +
                    "), the range holds " + fmt::to_string(range.buffer == nullptr ? 0 : range.size / 4));
    }
    return bind_elements(limits, range, 0, need, 4, "gated_activation", name);
}

}  // namespace

void record_gated_activation(Context& ctx, CommandList& list, const GatedActivationArgs& a) {
    const char* define = variant_define(a.activation);
    if (a.rows == 0 || a.cols == 0) {
        throw Error("gated_activation: rows and cols must be positive");
    }
    if (a.gate_stride < a.cols || a.up_stride < a.cols) {
        throw Error("gated_activation: row strides " + fmt::to_string(a.gate_stride) + " (gate) and " +
                    fmt::to_string(a.up_stride) + " (up) must be at least cols " + fmt::to_string(a.cols));
    }
    const ComputeLimits& limits = ctx.limits();
    check_tensor(a.y, std::uint64_t{a.rows} * a.cols, 4, "gated_activation", "y", shape_text({a.rows, a.cols}, "f32"));
    const ElementBinding gate = bind_view(limits, a.gate, a.rows, a.cols, a.gate_stride, "gate");
    const ElementBinding up = bind_view(limits, a.up, a.rows, a.cols, a.up_stride, "up");
    const ElementBinding y = bind_elements(limits, a.y, 0, std::uint64_t{a.rows} * a.cols, 4, "gated_activation", "y");

    const std::uint32_t max_wg = std::min(limits.workgroup_invocations, limits.workgroup_size[0]);
    const std::uint32_t wg_x = std::min<std::uint32_t>({64, max_wg, limits.workgroup_size[0]});
    const std::uint32_t wg_y = std::max<std::uint32_t>(
        1, std::min<std::uint32_t>({4, limits.workgroup_invocations / wg_x, limits.workgroup_size[1]}));
    if (ceil_div(a.rows, wg_y) > limits.workgroup_count[1] || ceil_div(a.cols, wg_x) > limits.workgroup_count[0]) {
        throw Error("gated_activation: [" + fmt::to_string(a.rows) + ", " + fmt::to_string(a.cols) +
                    "] needs more workgroups than maxComputeWorkGroupCount allows");
    }
    const Pipeline& pipeline = ctx.pipeline(PipelineDesc{.code = &shaders::variant("gated_activation", {define}),
                                                         .workgroup_size = {wg_x, wg_y, 1},
                                                         .push_constant_layout = GatedActivationPush::layout,
                                                         .binding_count = 3});
    const GatedActivationPush push{.rows = a.rows,
                                   .cols = a.cols,
                                   .gate_base = gate.base,
                                   .gate_stride = a.gate_stride,
                                   .up_base = up.base,
                                   .up_stride = a.up_stride,
                                   .y_base = y.base,
                                   .reserved = 0};
    const Binding bindings[] = {{gate.range, Access::Read}, {up.range, Access::Read}, {y.range, Access::Write}};
    list.dispatch(Dispatch{.pipeline = &pipeline,
                           .bindings = bindings,
                           .push_constants = push_bytes(push),
                           .groups = {narrow_u32(ceil_div(a.cols, wg_x), "gated_activation groups"),
                                      narrow_u32(ceil_div(a.rows, wg_y), "gated_activation groups"), 1},
                           .label = "gated_activation"});
}

}  // namespace vkf
