#include "host/ops/scale.hpp"

#include "base/error.hpp"
#include "host/ops/tensor_binding.hpp"
#include "host/util/math.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace vkf {

namespace {

void record(Context& ctx, CommandList& list, BufferRange x, BufferRange y, const BufferRange* columns, float scale) {
    const char* op = columns != nullptr ? "scale_columns" : "scale";
    if (!std::isfinite(scale)) {
        throw Error(std::string(op) + ": the scale " + fmt::format("{:f}", scale) + " is not finite");
    }
    if (x.size != y.size || x.size % 4 != 0 || x.buffer == nullptr || y.buffer == nullptr) {
        throw Error(std::string(op) + ": x and y must be equal ranges of whole fp32 elements");
    }
    const ComputeLimits& limits = ctx.limits();
    const std::uint64_t count = x.size / 4;
    std::uint32_t cols = 1;
    ElementBinding column_binding;
    if (columns != nullptr) {
        if (columns->buffer == nullptr || columns->size % 4 != 0 || columns->size == 0 ||
            count % (columns->size / 4) != 0) {
            throw Error("scale_columns: x holds " + fmt::to_string(count) +
                        " elements, not whole rows of the column scale's " +
                        fmt::to_string(columns->buffer == nullptr ? 0 : columns->size / 4));
        }
        cols = narrow_u32(columns->size / 4, "scale_columns columns");
        column_binding = bind_elements(limits, *columns, 0, cols, 4, op, "columns");
        if (column_binding.base != 0) {
            throw Error("scale_columns: the column scale must start at an aligned offset");
        }
    }
    const std::uint32_t wg = std::min<std::uint32_t>({256, limits.workgroup_invocations, limits.workgroup_size[0]});
    const Pipeline& pipeline =
        ctx.pipeline(PipelineDesc{.code = &shaders::variant("scale", {{"COLUMNS", columns != nullptr}}),
                                  .workgroup_size = {wg, 1, 1},
                                  .push_constant_layout = ScalePush::layout,
                                  .binding_count = columns != nullptr ? 3u : 2u});
    // Pieces of whole rows, so that every piece's first element starts a row.
    std::uint64_t piece = max_bound_elements(limits, 4) / cols * cols;
    if (piece == 0) {
        throw Error(std::string(op) + ": one row of " + fmt::to_string(cols) +
                    " elements exceeds maxStorageBufferRange");
    }
    for (std::uint64_t first = 0; first < count; first += piece) {
        const std::uint64_t n = std::min(piece, count - first);
        const ElementBinding xb = bind_elements(limits, x, first, n, 4, op, "x");
        const ElementBinding yb = bind_elements(limits, y, first, n, 4, op, "y");
        const ScalePush push{.count = static_cast<std::uint32_t>(n),
                             .cols = cols,
                             .first = 0,
                             .x_base = xb.base,
                             .y_base = yb.base,
                             .scale = scale};
        Binding bindings[3] = {{xb.range, Access::Read}, {yb.range, Access::Write}, {}};
        if (columns != nullptr) {
            bindings[2] = {column_binding.range, Access::Read};
        }
        list.dispatch(Dispatch{.pipeline = &pipeline,
                               .bindings = std::span<const Binding>(bindings, columns != nullptr ? 3 : 2),
                               .push_constants = push_bytes(push),
                               .groups = {narrow_u32(ceil_div(n, wg), "scale groups"), 1, 1},
                               .label = op});
    }
}

}  // namespace

void record_scale(Context& ctx, CommandList& list, BufferRange x, BufferRange y, float scale) {
    record(ctx, list, x, y, nullptr, scale);
}

void record_scale_columns(Context& ctx, CommandList& list, BufferRange x, BufferRange columns, BufferRange y,
                          float scale) {
    record(ctx, list, x, y, &columns, scale);
}

}  // namespace vkf
