#include "host/ops/elementwise.hpp"
#include "host/util/math.hpp"

#include "base/error.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <vector>

namespace vkf {

namespace {

constexpr std::uint32_t kElement = 4;

std::uint32_t workgroup_size(const Context& ctx) {
    // workgroup_size[0] is at most workgroup_invocations (effective_limits).
    return std::min<std::uint32_t>(256, ctx.limits().workgroup_size[0]);
}

// Largest chunk that fits one binding and keeps the next chunk's offset aligned.
VkDeviceSize chunk_bytes(const Context& ctx) {
    const VkDeviceSize align = std::lcm<VkDeviceSize>(ctx.limits().storage_offset_alignment, kElement);
    const VkDeviceSize max_elements = std::min<VkDeviceSize>(ctx.limits().storage_buffer_range, UINT32_MAX);
    return max_elements / align * align;
}

void check_elements(const BufferRange& r, const char* op, const char* name) {
    if (r.size % kElement != 0) {
        throw Error(std::string(op) + ": range '" + name + "' of buffer '" +
                    (r.buffer ? r.buffer->name() : std::string("?")) + "' is " + fmt::to_string(r.size) +
                    " bytes, not a whole number of 32-bit elements");
    }
}

void record(Context& ctx, CommandList& list, const SpirvCode& code, std::span<const BufferRange> inputs,
            BufferRange dst, std::uint32_t value, const char* label) {
    check_elements(dst, label, "dst");
    for (const BufferRange& in : inputs) {
        check_elements(in, label, "src");
        if (in.size != dst.size) {
            throw Error(std::string(label) + ": input range of " + fmt::to_string(in.size) +
                        " bytes, output range of " + fmt::to_string(dst.size));
        }
    }
    const std::uint32_t wg = workgroup_size(ctx);
    const Pipeline& pipeline =
        ctx.pipeline(PipelineDesc{.code = &code,
                                  .workgroup_size = {wg, 1, 1},
                                  .push_constant_layout = ElementwisePush::layout,
                                  .binding_count = static_cast<std::uint32_t>(inputs.size() + 1)});
    const VkDeviceSize chunk = chunk_bytes(ctx);
    std::vector<Binding> bindings(inputs.size() + 1);
    for (VkDeviceSize done = 0; done < dst.size; done += chunk) {
        const VkDeviceSize n = std::min(chunk, dst.size - done);
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            bindings[i] = Binding{{inputs[i].buffer, inputs[i].offset + done, n}, Access::Read};
        }
        bindings.back() = Binding{{dst.buffer, dst.offset + done, n}, Access::Write};
        const ElementwisePush push{.count = static_cast<std::uint32_t>(n / kElement), .value = value};
        list.dispatch(Dispatch{.pipeline = &pipeline,
                               .bindings = bindings,
                               .push_constants = push_bytes(push),
                               .groups = {narrow_u32(ceil_div(push.count, wg), "elementwise groups"), 1, 1},
                               .label = label});
    }
}

}  // namespace

void record_fill(Context& ctx, CommandList& list, BufferRange dst, std::uint32_t value) {
    record(ctx, list, shaders::variant("elementwise", {"OP_FILL"}), {}, dst, value, "fill");
}

void record_fill(Context& ctx, CommandList& list, BufferRange dst, float value) {
    record_fill(ctx, list, dst, std::bit_cast<std::uint32_t>(value));
}

void record_copy(Context& ctx, CommandList& list, BufferRange src, BufferRange dst) {
    const BufferRange in[] = {src};
    record(ctx, list, shaders::variant("elementwise", {"OP_COPY"}), in, dst, 0, "copy");
}

void record_add(Context& ctx, CommandList& list, BufferRange a, BufferRange b, BufferRange dst) {
    const BufferRange in[] = {a, b};
    record(ctx, list, shaders::variant("elementwise", {"OP_ADD"}), in, dst, 0, "add");
}

}  // namespace vkf
