#include "host/ops/kv_append.hpp"
#include "host/util/math.hpp"

#include "base/error.hpp"
#include "host/ops/tensor_binding.hpp"
#include "host/quant/kv_quant.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace vkf {

void record_kv_append(Context& ctx, CommandList& list, const KvAppendArgs& a) {
    const ComputeLimits& limits = ctx.limits();
    const KvAppendShape& c = a.shape;
    const bool quant = a.cache_quant != QuantFormat::None;
    const bool f16 = !quant && a.cache_dtype == DType::F16;
    const auto csize = static_cast<std::uint32_t>(element_size(a.cache_dtype));
    const std::string shape = shape_text({c.batch, c.max_len, c.n_kv_head, c.head_dim},
                                         quant ? to_string(a.cache_quant) : to_string(a.cache_dtype));
    if (c.batch == 0 || c.new_len == 0 || c.n_kv_head == 0 || c.head_dim == 0 || c.head_dim % 2 != 0) {
        throw Error("kv_append: batch, new_len, n_kv_head must be positive and head_dim positive and even; got " +
                    fmt::to_string(c.batch) + ", " + fmt::to_string(c.new_len) + ", " + fmt::to_string(c.n_kv_head) +
                    ", " + fmt::to_string(c.head_dim));
    }
    const bool slots = a.slots.buffer != nullptr;
    if (slots && c.batch != 1) {
        throw Error("kv_append: slots place the rows of one sequence's step (batch 1); got batch " +
                    fmt::to_string(c.batch));
    }
    if (slots) {
        check_tensor(a.slots, c.new_len, 4, "kv_append", "slots", shape_text({c.new_len}, "u32"));
    } else if (std::uint64_t{c.pos} + c.new_len > c.max_len) {
        throw Error("kv_append: rows " + fmt::to_string(c.pos) + ".." + fmt::to_string(c.pos + c.new_len - 1) +
                    " do not fit the cache " + shape + " (max_len " + fmt::to_string(c.max_len) + ")");
    }
    if (quant) {
        check_kv_quant_head_dim(a.cache_quant, c.head_dim, "kv_append");
    }
    const std::uint64_t key_rows = std::uint64_t{c.batch} * c.max_len;
    const std::uint32_t row_values = c.n_kv_head * c.head_dim;
    // In elements, or in words for a quantized cache (its shader's unit).
    const std::uint64_t cache_elements =
        quant ? key_rows * kv_row_bytes(DType::F32, a.cache_quant, row_values) / 4 : key_rows * row_values;
    const std::uint32_t cache_unit = quant ? 4 : csize;
    check_tensor(a.cache, cache_elements, cache_unit, "kv_append", "cache", shape);
    if ((f16 || quant) && a.cache.offset % 4 != 0) {
        throw Error(
            "kv_append: an fp16 or quantized cache must start at a multiple of 4 bytes (written as words); "
            "offset " +
            fmt::to_string(a.cache.offset));
    }
    // The last source element read, + 1, bounds the source range.
    const HeadLayout& s = a.src_layout;
    const std::uint64_t src_extent = s.offset + (c.batch - 1) * s.batch_stride + (c.new_len - 1) * s.token_stride +
                                     (c.n_kv_head - 1) * s.head_stride + c.head_dim;
    if (a.src.buffer == nullptr || a.src.size % 4 != 0 || src_extent > a.src.size / 4) {
        throw Error("kv_append: the source layout reaches element " + fmt::to_string(src_extent) +
                    " but the source range holds " + fmt::to_string(a.src.size / 4) + " fp32 elements");
    }
    const ElementBinding src = bind_elements(limits, a.src, s.offset, src_extent - s.offset, 4, "kv_append", "src");
    const ElementBinding cache = bind_elements(limits, a.cache, 0, cache_elements, cache_unit, "kv_append", "cache");
    for (std::uint64_t stride : {s.batch_stride, s.token_stride, s.head_stride}) {
        if (stride > UINT32_MAX) {
            throw Error("kv_append: source stride " + fmt::to_string(stride) + " exceeds 32 bits");
        }
    }
    const std::uint32_t wg = std::min<std::uint32_t>({64, limits.workgroup_invocations, limits.workgroup_size[0]});
    const Pipeline& pipeline = ctx.pipeline(
        PipelineDesc{.code = &shaders::variant("kv_append", {{"CACHE_F16", f16},
                                                             {"CACHE_Q8_0", a.cache_quant == QuantFormat::Q8_0},
                                                             {"CACHE_Q4_0", a.cache_quant == QuantFormat::Q4_0},
                                                             {"SLOTS", slots}}),
                     .workgroup_size = {wg, 1, 1},
                     .push_constant_layout = KvAppendPush::layout,
                     .binding_count = slots ? 3u : 2u});
    const ElementBinding slot_binding =
        slots ? bind_elements(limits, a.slots, 0, c.new_len, 4, "kv_append", "slots") : ElementBinding{};
    const KvAppendPush push{.new_len = c.new_len,
                            .n_kv_head = c.n_kv_head,
                            .head_dim = c.head_dim,
                            .max_len = c.max_len,
                            .pos = c.pos,
                            .src_base = src.base,
                            .src_batch_stride = static_cast<std::uint32_t>(s.batch_stride),
                            .src_token_stride = static_cast<std::uint32_t>(s.token_stride),
                            .src_head_stride = static_cast<std::uint32_t>(s.head_stride),
                            .cache_base = cache.base,
                            .slots_base = slot_binding.base};
    const Binding bindings[] = {
        {src.range, Access::Read}, {cache.range, Access::Write}, {slot_binding.range, Access::Read}};
    // One invocation per element pair, or per scale word (two blocks) of a quantized cache's
    // key row.
    const std::uint32_t pairs = quant ? (row_values / kQuantBlock + 1) / 2 : row_values / 2;
    list.dispatch(Dispatch{.pipeline = &pipeline,
                           .bindings = std::span(bindings, slots ? 3 : 2),
                           .push_constants = push_bytes(push),
                           .groups = {narrow_u32(ceil_div(pairs, wg), "kv_append groups"), c.new_len, c.batch},
                           .label = "kv append"});
}

}  // namespace vkf
