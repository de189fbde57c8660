#include "host/ops/pooling.hpp"

#include "base/error.hpp"
#include "host/ops/tensor_binding.hpp"
#include "host/util/math.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <string>

namespace vkf {

namespace {

constexpr std::uint32_t kMaxWorkgroup = 256;

// The column loop times the row loop, the normalizing loop and the tree reduction.
std::uint64_t loop_iterations(std::uint32_t rows, std::uint32_t dim, std::uint32_t wg) {
    const std::uint64_t columns = ceil_div(dim, wg);
    return columns * (std::uint64_t{rows} + 1) + columns + std::bit_width(wg) + 8;
}

}  // namespace

void record_pooling(Context& ctx, CommandList& list, const PoolingArgs& a) {
    if (a.pooling != Pooling::Mean && a.pooling != Pooling::Cls) {
        throw Error("pooling: only mean and cls pool the rows (got " + std::string(pooling_name(a.pooling)) + ")");
    }
    if (a.rows == 0 || a.dim == 0) {
        throw Error("pooling: rows and dim must be positive");
    }
    const ComputeLimits& limits = ctx.limits();
    check_tensor(a.x, std::uint64_t{a.rows} * a.dim, 4, "pooling", "x", shape_text({a.rows, a.dim}, "f32"));
    check_tensor(a.y, a.dim, 4, "pooling", "y", shape_text({a.dim}, "f32"));
    const std::uint32_t rows_read = a.pooling == Pooling::Mean ? a.rows : 1;
    const ElementBinding x = bind_elements(limits, a.x, 0, std::uint64_t{rows_read} * a.dim, 4, "pooling", "x");
    const ElementBinding y = bind_elements(limits, a.y, 0, a.dim, 4, "pooling", "y");

    const std::uint32_t cap = std::bit_floor(
        std::min({kMaxWorkgroup, limits.workgroup_invocations, limits.workgroup_size[0], limits.shared_memory / 4}));
    if (cap == 0) {
        throw Error("pooling: no workgroup fits " + fmt::to_string(limits.shared_memory) + " bytes of shared memory");
    }
    const std::uint32_t wg = std::min(cap, std::bit_ceil(a.dim));
    if (limits.max_loop_iterations != 0 && loop_iterations(rows_read, a.dim, wg) > limits.max_loop_iterations / 2) {
        throw Error("pooling: " + fmt::to_string(rows_read) + " rows of " + fmt::to_string(a.dim) +
                    " elements need more loop iterations per invocation than this driver runs (" +
                    fmt::to_string(limits.max_loop_iterations) + ")");
    }
    const Pipeline& pipeline = ctx.pipeline(PipelineDesc{.code = &shaders::variant("pooling", {}),
                                                         .workgroup_size = {wg, 1, 1},
                                                         .constants = {{VKF_POOLING_SPEC_WG, wg}},
                                                         .push_constant_layout = PoolingPush::layout,
                                                         .binding_count = 2,
                                                         .shared_memory_bytes = 4 * wg});
    std::uint32_t flags = a.pooling == Pooling::Mean ? VKF_POOLING_FLAG_MEAN : 0;
    flags |= a.normalize ? VKF_POOLING_FLAG_NORMALIZE : 0;
    const PoolingPush push{
        .rows = rows_read, .dim = a.dim, .x_base = x.base, .y_base = y.base, .flags = flags, .reserved = 0};
    const Binding bindings[] = {{x.range, Access::Read}, {y.range, Access::ReadWrite}};
    list.dispatch(Dispatch{.pipeline = &pipeline,
                           .bindings = bindings,
                           .push_constants = push_bytes(push),
                           .groups = {1, 1, 1},
                           .label = "pooling"});
}

}  // namespace vkf
