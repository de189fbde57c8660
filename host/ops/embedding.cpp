#include "host/ops/embedding.hpp"
#include "host/util/math.hpp"

#include "host/ops/tensor_binding.hpp"
#include "runtime/error.hpp"
#include "shaders/variants.hpp"

#include <algorithm>

namespace vkf {

void record_embedding(Context& ctx, CommandList& list, const EmbeddingArgs& a) {
    const ComputeLimits& limits = ctx.limits();
    const bool f16 = a.table_dtype == DType::F16;
    const auto tsize = static_cast<std::uint32_t>(element_size(a.table_dtype));
    check_tensor(a.ids, a.tokens, 4, "embedding", "ids", shape_text({a.tokens}, "u32"));
    check_tensor(a.table, std::uint64_t{a.vocab} * a.hidden, tsize, "embedding", "table",
                 shape_text({a.vocab, a.hidden}, to_string(a.table_dtype)));
    check_tensor(a.out, std::uint64_t{a.tokens} * a.hidden, 4, "embedding", "out",
                 shape_text({a.tokens, a.hidden}, "f32"));
    const std::uint32_t wg = std::min<std::uint32_t>({64, limits.workgroup_invocations, limits.workgroup_size[0]});
    const Pipeline& pipeline = ctx.pipeline(PipelineDesc{.code = &shaders::variant("embedding", {{"WEIGHTS_F16", f16}}),
                                                         .workgroup_size = {wg, 1, 1},
                                                         .push_constant_layout = EmbeddingPush::layout,
                                                         .binding_count = 3});
    // Table rows per piece (BLOOM's 250880 x 1024 fp16 table is 490 MiB), and tokens per piece.
    const std::uint64_t rows_per_piece = max_bound_elements(limits, tsize) / a.hidden;
    const std::uint64_t tokens_per_piece = max_bound_elements(limits, 4) / a.hidden;
    if (rows_per_piece == 0 || tokens_per_piece == 0) {
        throw Error("embedding: one row of " + std::to_string(a.hidden) + " elements exceeds maxStorageBufferRange");
    }
    for (std::uint64_t t0 = 0; t0 < a.tokens; t0 += tokens_per_piece) {
        const std::uint64_t tc = std::min(tokens_per_piece, a.tokens - t0);
        const ElementBinding ids = bind_elements(limits, a.ids, t0, tc, 4, "embedding", "ids");
        const ElementBinding out = bind_elements(limits, a.out, t0 * a.hidden, tc * a.hidden, 4, "embedding", "out");
        for (std::uint64_t r0 = 0; r0 < a.vocab; r0 += rows_per_piece) {
            const std::uint64_t rc = std::min(rows_per_piece, a.vocab - r0);
            const ElementBinding table =
                bind_elements(limits, a.table, r0 * a.hidden, rc * a.hidden, tsize, "embedding", "table");
            const EmbeddingPush push{.tokens = static_cast<std::uint32_t>(tc),
                                     .hidden = a.hidden,
                                     .vocab = a.vocab,
                                     .row_begin = static_cast<std::uint32_t>(r0),
                                     .row_count = static_cast<std::uint32_t>(rc),
                                     .ids_base = ids.base,
                                     .table_base = table.base,
                                     .out_base = out.base,
                                     .zero_invalid = r0 + rc == a.vocab ? 1u : 0u};
            const Binding bindings[] = {
                {ids.range, Access::Read}, {table.range, Access::Read}, {out.range, Access::Write}};
            list.dispatch(Dispatch{
                .pipeline = &pipeline,
                .bindings = bindings,
                .push_constants = push_bytes(push),
                .groups = {narrow_u32(ceil_div(a.hidden, wg), "embedding groups"), static_cast<std::uint32_t>(tc), 1},
                .label = "embedding"});
        }
    }
}

}  // namespace vkf
