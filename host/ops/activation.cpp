#include "host/ops/activation.hpp"
#include "host/util/math.hpp"

#include "base/error.hpp"
#include "host/ops/tensor_binding.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace vkf {

namespace {

void record_unary(Context& ctx, CommandList& list, const SpirvCode& code, BufferRange src, BufferRange dst,
                  const char* label, float bound = 0.0f) {
    const ComputeLimits& limits = ctx.limits();
    if (src.size != dst.size || src.size % 4 != 0) {
        throw Error(std::string(label) + ": src range of " + fmt::to_string(src.size) + " bytes and dst range of " +
                    fmt::to_string(dst.size) + " bytes must be equal whole numbers of fp32 elements");
    }
    const std::uint64_t count = src.size / 4;
    check_tensor(src, count, 4, label, "src", shape_text({count}, "f32"));
    check_tensor(dst, count, 4, label, "dst", shape_text({count}, "f32"));
    const std::uint32_t wg = std::min<std::uint32_t>({256, limits.workgroup_invocations, limits.workgroup_size[0]});
    const Pipeline& pipeline = ctx.pipeline(PipelineDesc{.code = &code,
                                                         .workgroup_size = {wg, 1, 1},
                                                         .push_constant_layout = ActivationPush::layout,
                                                         .binding_count = 2});
    const std::uint64_t piece = max_bound_elements(limits, 4);
    for (std::uint64_t first = 0; first < count; first += piece) {
        const std::uint64_t n = std::min(piece, count - first);
        const ElementBinding s = bind_elements(limits, src, first, n, 4, label, "src");
        const ElementBinding d = bind_elements(limits, dst, first, n, 4, label, "dst");
        const ActivationPush push{
            .count = static_cast<std::uint32_t>(n), .src_base = s.base, .dst_base = d.base, .bound = bound};
        const Binding bindings[] = {{s.range, Access::Read}, {d.range, Access::Write}};
        list.dispatch(Dispatch{.pipeline = &pipeline,
                               .bindings = bindings,
                               .push_constants = push_bytes(push),
                               .groups = {narrow_u32(ceil_div(n, wg), "activation groups"), 1, 1},
                               .label = label});
    }
}

}  // namespace

void record_activation(Context& ctx, CommandList& list, Activation activation, BufferRange src, BufferRange dst) {
    switch (activation) {
        case Activation::GeluTanh:
            record_unary(ctx, list, shaders::variant("activation", {"GELU_TANH"}), src, dst, "gelu_tanh");
            break;
        case Activation::GeluErf:
            record_unary(ctx, list, shaders::variant("activation", {"GELU_ERF"}), src, dst, "gelu_erf");
            break;
        default:
            throw Error(std::string("record_activation: applies a GELU form, not ") + to_string(activation) +
                        " (gated units run as record_gated_activation)");
    }
}

void record_clamp(Context& ctx, CommandList& list, BufferRange src, BufferRange dst, float bound) {
    if (!(bound > 0.0f) || !std::isfinite(bound)) {
        throw Error("record_clamp: the bound must be a positive finite number, got " + fmt::format("{:f}", bound));
    }
    record_unary(ctx, list, shaders::variant("activation", {"CLAMP"}), src, dst, "clamp", bound);
}

void record_erf(Context& ctx, CommandList& list, BufferRange src, BufferRange dst) {
    record_unary(ctx, list, shaders::variant("activation", {"ERF"}), src, dst, "erf");
}

}  // namespace vkf
