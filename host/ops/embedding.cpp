#include "host/ops/embedding.hpp"
#include "host/util/math.hpp"

#include "base/error.hpp"
#include "host/ops/tensor_binding.hpp"
#include "host/quant/kquant_format.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf {

namespace {

// How one row of the table is stored and bound: as elements of table_dtype, or (quantized)
// as 32-bit words of values and fp16 scales.
struct TableRows {
    std::uint64_t row_elements;  // elements of `table` (words when quantized) per row
    std::uint32_t element_bytes;
    std::uint64_t row_scales;  // 0 unless quantized
};

TableRows table_rows(const EmbeddingArgs& a) {
    if (a.quant == QuantFormat::None) {
        return {a.hidden, static_cast<std::uint32_t>(element_size(a.table_dtype)), 0};
    }
    if (is_kquant(a.quant)) {
        // Bytes of super-blocks; the scales are inside them.
        return {kquant_row_bytes(kquant_ggml_type(a.quant), a.hidden,
                                 fmt::format("embedding: a {} table", to_string(a.quant))),
                1, 0};
    }
    if (a.hidden % kQuantBlock != 0) {
        throw Error("embedding: a " + std::string(to_string(a.quant)) + " table needs rows of whole blocks of " +
                    fmt::to_string(kQuantBlock) + "; hidden = " + fmt::to_string(a.hidden));
    }
    return {quant_row_bytes(a.quant, a.hidden) / 4, 4, quant_row_scales(a.hidden)};
}

}  // namespace

void record_embedding(Context& ctx, CommandList& list, const EmbeddingArgs& a) {
    const ComputeLimits& limits = ctx.limits();
    const bool quant = a.quant != QuantFormat::None;
    const bool kquant = is_kquant(a.quant);
    const bool f16 = !quant && a.table_dtype == DType::F16;
    const TableRows rows = table_rows(a);
    check_tensor(a.ids, a.tokens, 4, "embedding", "ids", shape_text({a.tokens}, "u32"));
    if (kquant) {
        check_tensor(a.table, a.vocab * rows.row_elements, 1, "embedding", "table super-blocks",
                     shape_text({a.vocab, static_cast<std::uint32_t>(rows.row_elements)},
                                fmt::format("bytes ({})", to_string(a.quant))));
    } else if (quant) {
        const std::string format = to_string(a.quant);
        check_tensor(
            a.table, a.vocab * rows.row_elements, 4, "embedding", "table values",
            shape_text({a.vocab, static_cast<std::uint32_t>(rows.row_elements * 4)}, "bytes (" + format + ")"));
        check_tensor(a.scales, a.vocab * rows.row_scales, 2, "embedding", "table scales",
                     shape_text({a.vocab, static_cast<std::uint32_t>(rows.row_scales)}, "f16 (" + format + ")"));
    } else {
        check_tensor(a.table, std::uint64_t{a.vocab} * a.hidden, rows.element_bytes, "embedding", "table",
                     shape_text({a.vocab, a.hidden}, to_string(a.table_dtype)));
    }
    check_tensor(a.out, std::uint64_t{a.tokens} * a.hidden, 4, "embedding", "out",
                 shape_text({a.tokens, a.hidden}, "f32"));
    const std::uint32_t wg = std::min<std::uint32_t>({64, limits.workgroup_invocations, limits.workgroup_size[0]});
    const Pipeline& pipeline =
        ctx.pipeline(PipelineDesc{.code = &shaders::variant("embedding", {{"WEIGHTS_F16", f16},
                                                                          {"Q8_0", a.quant == QuantFormat::Q8_0},
                                                                          {"Q4_0", a.quant == QuantFormat::Q4_0},
                                                                          {"Q2_K", a.quant == QuantFormat::Q2_K},
                                                                          {"Q3_K", a.quant == QuantFormat::Q3_K},
                                                                          {"Q4_K", a.quant == QuantFormat::Q4_K},
                                                                          {"Q5_K", a.quant == QuantFormat::Q5_K},
                                                                          {"Q6_K", a.quant == QuantFormat::Q6_K},
                                                                          {"Q4_1", a.quant == QuantFormat::Q4_1},
                                                                          {"Q5_0", a.quant == QuantFormat::Q5_0},
                                                                          {"Q5_1", a.quant == QuantFormat::Q5_1}}),
                                  .workgroup_size = {wg, 1, 1},
                                  .push_constant_layout = EmbeddingPush::layout,
                                  .binding_count = quant ? 4u : 3u});
    // Table rows per piece (BLOOM's 250880 x 1024 fp16 table is 490 MiB), and tokens per piece.
    std::uint64_t rows_per_piece = max_bound_elements(limits, rows.element_bytes) / rows.row_elements;
    if (quant && !kquant) {
        rows_per_piece = std::min(rows_per_piece, max_bound_elements(limits, 2) / rows.row_scales);
    }
    const std::uint64_t tokens_per_piece = max_bound_elements(limits, 4) / a.hidden;
    if (rows_per_piece == 0 || tokens_per_piece == 0) {
        throw Error("embedding: one row of " + fmt::to_string(a.hidden) + " elements exceeds maxStorageBufferRange");
    }
    for (std::uint64_t t0 = 0; t0 < a.tokens; t0 += tokens_per_piece) {
        const std::uint64_t tc = std::min(tokens_per_piece, a.tokens - t0);
        const ElementBinding ids = bind_elements(limits, a.ids, t0, tc, 4, "embedding", "ids");
        const ElementBinding out = bind_elements(limits, a.out, t0 * a.hidden, tc * a.hidden, 4, "embedding", "out");
        for (std::uint64_t r0 = 0; r0 < a.vocab; r0 += rows_per_piece) {
            const std::uint64_t rc = std::min(rows_per_piece, a.vocab - r0);
            const ElementBinding table = bind_elements(limits, a.table, r0 * rows.row_elements, rc * rows.row_elements,
                                                       rows.element_bytes, "embedding", "table");
            const ElementBinding scales = quant && !kquant
                                              ? bind_elements(limits, a.scales, r0 * rows.row_scales,
                                                              rc * rows.row_scales, 2, "embedding", "table scales")
                                              : table;
            const EmbeddingPush push{.tokens = static_cast<std::uint32_t>(tc),
                                     .hidden = a.hidden,
                                     .vocab = a.vocab,
                                     .row_begin = static_cast<std::uint32_t>(r0),
                                     .row_count = static_cast<std::uint32_t>(rc),
                                     .ids_base = ids.base,
                                     .table_base = table.base,
                                     .out_base = out.base,
                                     .scales_base = quant && !kquant ? scales.base : 0,
                                     .zero_invalid = r0 + rc == a.vocab ? 1u : 0u};
            const Binding bindings[] = {{ids.range, Access::Read},
                                        {table.range, Access::Read},
                                        {out.range, Access::Write},
                                        {scales.range, Access::Read}};
            list.dispatch(Dispatch{
                .pipeline = &pipeline,
                .bindings = std::span(bindings, quant ? 4 : 3),
                .push_constants = push_bytes(push),
                .groups = {narrow_u32(ceil_div(a.hidden, wg), "embedding groups"), static_cast<std::uint32_t>(tc), 1},
                .label = "embedding"});
        }
    }
}

}  // namespace vkf
