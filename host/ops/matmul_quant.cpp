// The matmul with block-quantized weights (shaders/matmul_quant.comp): its plan and its
// recording, reached through plan_matmul and record_matmul (host/ops/matmul.hpp). The K
// split, the pieces and the reduce pass are the dense matmul's (matmul_internal.hpp).

#include "host/ops/matmul_internal.hpp"
#include "host/util/math.hpp"
#include "runtime/error.hpp"
#include "shaders/interface/matmul_quant_x.h"
#include "shaders/variants.hpp"

#include <algorithm>
#include <bit>

namespace vkf::matmul_detail {

namespace {

// Row-dot kernel (GPUs' decoding; subgroup arithmetic): W rows per subgroup pass, at most
// this many groups of them per workgroup (a subgroup each) and rows of X per workgroup (a
// lane holds one block of X per row, 32 floats, in registers).
// CPU devices take the blocked kernel for every shape: on lavapipe (Mesa 22.3, m = 1,
// n x k = 4096 x 1024, 1024 x 4096, 250880 x 1024) it ran 1.4-2.4x faster than the row-dot
// kernel. Its invocations all read the same X, which llvmpipe loads once for all lanes,
// while the row-dot kernel's lanes read different blocks of X, a load per lane; and holding
// a block of X per lane is more than llvmpipe's registers hold.
constexpr std::uint32_t kRowDotCols = 8;
constexpr std::uint32_t kRowDotGroups = 4;
constexpr std::uint32_t kRowDotMaxRows = 4;
// Blocked kernel: an invocation's block of Y (1 x 8 for one row), and the widest workgroup.
constexpr std::uint32_t kBlockRows = 4;
constexpr std::uint32_t kBlockCols = 8;
constexpr std::uint32_t kBlockedWorkgroup = 64;
// The pre-pass quantizing X for the integer dot-product path: blocks per workgroup (at most).
constexpr std::uint32_t kQuantXWorkgroup = 64;
// Storage buffers of matmul_quant.comp: X, W values, W scales, bias, residual, Y.
constexpr std::uint32_t kQuantBindings = 6;

// Words of quantized X for `rows` rows (interface/matmul_quant_x.h): 8 words of values and
// 2 of scale and sum per block of 32.
std::uint64_t quantized_x_words(std::uint64_t rows, std::uint32_t k) {
    return rows * (k / kQuantBlock) * 10;
}

// Loop iterations of one invocation over a K slice of `len` (a multiple of 32): the
// blocked kernel has one per step of blocks_per_step blocks (its other loops are
// unrolled); a row-dot subgroup makes a pass over each of its column groups, each one
// iteration per `subgroup_size` steps.
std::uint64_t quant_loop_iterations(const MatmulPlan& p, std::uint64_t len) {
    const std::uint64_t steps = ceil_div(len, std::uint64_t{kQuantBlock} * p.blocks_per_step);
    if (p.kernel == MatmulKernel::RowDot) {
        const std::uint64_t passes = ceil_div(p.column_groups, p.workgroup_size / p.subgroup_size);
        return passes * (ceil_div(steps, p.subgroup_size) + 2) + 8;
    }
    return steps + 8;
}

// Blocks per step of the blocked kernel: 4 or 2 when every row's scales start on a multiple
// of it, else 1. (The row-dot kernel takes one: its lanes hold a block of X each, and on
// lavapipe more blocks a step made it slower, 0.6-0.8x.)
std::uint32_t blocks_per_step(MatmulKernel kernel, std::uint64_t row_blocks) {
    if (kernel == MatmulKernel::Blocked) {
        for (std::uint32_t g : {4u, 2u}) {
            if (row_blocks % g == 0) {
                return g;
            }
        }
    }
    return 1;
}

std::string shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) {
    return "[" + std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) + "]";
}

}  // namespace

MatmulPlan plan_matmul_quant(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                             DType bias_dtype, const MatmulOptions& options, QuantFormat quant) {
    const ComputeLimits& limits = device.limits;
    if (m == 0 || n == 0 || k == 0) {
        throw Error("matmul: empty shape m=" + std::to_string(m) + " n=" + std::to_string(n) +
                    " k=" + std::to_string(k));
    }
    if (quant != QuantFormat::Q8_0 && quant != QuantFormat::Q4_0) {
        throw Error("matmul: unknown block format " + std::to_string(static_cast<std::uint32_t>(quant)));
    }
    if (k % kQuantBlock != 0) {
        throw Error("matmul " + shape(m, n, k) + " with " + to_string(quant) + " weights: k = " + std::to_string(k) +
                    " is not a multiple of the block size " + std::to_string(kQuantBlock) +
                    "; W [n, k] must be whole blocks of 32 along k");
    }
    if (bias_dtype != DType::F32 && bias_dtype != DType::F16) {
        throw Error(std::string("matmul: the bias of quantized weights (weight_dtype) must be f32 or f16, not ") +
                    to_string(bias_dtype));
    }
    // Both kernels bind X, the values, the scales, bias, residual and Y; with fewer storage
    // buffers they write partial sums (X, values, scales, P) and matmul.comp's reduce pass
    // (P, bias, residual, Y) applies the epilogue.
    check_storage_buffers(limits, kSeparateEpilogueBindings,
                          std::string("matmul with ") + to_string(quant) + " weights");
    MatmulKernel kernel = options.kernel;
    // The integer dot-product path: asked for, on a device with the feature, in the blocked kernel.
    const bool int_dot = options.int8_activations && limits.integer_dot_product &&
                         (kernel == MatmulKernel::Auto || kernel == MatmulKernel::Blocked);
    if (int_dot) {
        kernel = MatmulKernel::Blocked;
    }
    if (kernel == MatmulKernel::Auto) {
        kernel =
            !device.cpu && rowdot_fits(limits) && m <= kRowDotMaxRows ? MatmulKernel::RowDot : MatmulKernel::Blocked;
    }
    MatmulPlan plan;
    plan.kernel = kernel;
    plan.quant = quant;
    plan.wide_loads = limits.int64;
    plan.int_dot = int_dot;
    plan.separate_epilogue = limits.storage_buffers < kQuantBindings;
    std::uint64_t groups = 0;  // workgroups of the whole output, before splitting K
    if (kernel == MatmulKernel::RowDot) {
        groups = plan_rowdot(plan, device, m, n, kRowDotMaxRows, kRowDotCols, kRowDotGroups, " for quantized weights");
    } else if (kernel == MatmulKernel::Blocked) {
        groups = plan_blocked(plan, device, m, n, kBlockRows, kBlockCols, kBlockedWorkgroup);
    } else {
        throw Error(std::string("matmul: the ") + to_string(kernel) + " kernel does not read " + to_string(quant) +
                    " weights (quantized weights have the rowdot and blocked kernels)");
    }
    plan.blocks_per_step = blocks_per_step(kernel, k / kQuantBlock);
    split_k(plan, device, k, groups, kQuantBlock * plan.blocks_per_step, options, quant_loop_iterations);
    // A binding of W holds whole rows of values (words) and of scales (fp16).
    const std::uint64_t row_words = quant_row_bytes(quant, k) / 4;
    const std::uint64_t row_scales = quant_row_scales(k);
    const std::uint64_t max_w_rows =
        std::min(max_bound_elements(limits, 4) / row_words, max_bound_elements(limits, 2) / row_scales);
    plan_pieces(plan, limits, m, n, k, max_w_rows);
    if (plan.int_dot) {
        // Quantized X of a row piece first, then the partial sums from an aligned offset.
        plan.xq_scratch_bytes =
            round_up(4 * quantized_x_words(plan.rows_per_piece, k), limits.storage_offset_alignment);
        plan.scratch_bytes += plan.xq_scratch_bytes;
    }
    return plan;
}

void record_matmul_quant(Context& ctx, CommandList& list, const MatmulArgs& a) {
    const ComputeLimits& limits = ctx.limits();
    const MatmulPlan plan = plan_matmul_quant(matmul_device(ctx), a.m, a.n, a.k, a.weight_dtype, a.options, a.quant);
    const bool f16 = a.weight_dtype == DType::F16;
    const auto bsize = static_cast<std::uint32_t>(element_size(a.weight_dtype));
    const bool has_bias = a.bias.buffer != nullptr;
    const bool has_residual = a.residual.buffer != nullptr;
    const std::uint64_t row_bytes = quant_row_bytes(a.quant, a.k);
    const std::uint64_t row_words = row_bytes / 4;
    const std::uint64_t row_scales = quant_row_scales(a.k);
    const std::string wtype = to_string(a.quant);
    check_tensor(a.x, std::uint64_t{a.m} * a.k, 4, "matmul", "X", shape_text({a.m, a.k}, "f32"));
    // The values plane is bound and read in 32-bit words: its offset must be a multiple of 4.
    check_tensor(a.w, a.n * row_words, 4, "matmul", "W values",
                 shape_text({a.n, static_cast<std::uint32_t>(row_bytes)}, "bytes (" + wtype + ")"));
    check_tensor(a.scales, a.n * row_scales, 2, "matmul", "W scales",
                 shape_text({a.n, static_cast<std::uint32_t>(row_scales)}, "f16 (" + wtype + ")"));
    check_tensors(limits, a, plan);
    if (a.x_norm) {
        throw Error(
            "matmul: a fused LayerNorm of X needs dense weights (the row-dot kernel); run record_layernorm "
            "first for " +
            std::string(to_string(a.quant)));
    }
    // The separate epilogue's kernels write partial sums, as split K does.
    const bool split = plan.n_splits > 1 || plan.separate_epilogue;

    // Rows of X and W that start on 16 bytes are read as vectors; others (tensors at
    // unaligned offsets) by the SCALAR variant. Scales are read blocks_per_step at a time
    // where a piece's scales start on a multiple of it, else fewer. Pipelines are made when
    // a piece needs them.
    // Split K: the slices write plain partial sums and the reduce pass scatters.
    const bool scatter_main = a.scatter.has_value() && !split;
    const std::vector<Binding> scatter = scatter_bindings(a);
    const char* label = a.scatter ? "matmul (QKV scatter)" : "matmul";  // fused work under its own name
    const Pipeline* pipelines[2][3] = {};
    const auto pipeline = [&](bool vector_loads, std::uint32_t bg) -> const Pipeline& {
        const Pipeline*& p = pipelines[vector_loads ? 1 : 0][std::countr_zero(bg)];
        if (p == nullptr) {
            std::vector<SpecConstant> constants = {{VKF_MATMUL_QUANT_SPEC_RM, plan.block_m},
                                                   {VKF_MATMUL_QUANT_SPEC_RN, plan.block_n},
                                                   {VKF_MATMUL_QUANT_SPEC_BG, bg}};
            if (plan.kernel == MatmulKernel::RowDot) {
                constants.push_back({VKF_MATMUL_QUANT_SPEC_RG, plan.column_groups});
            }
            if (scatter_main) {
                const std::vector<SpecConstant> more = scatter_constants(a);
                constants.insert(constants.end(), more.begin(), more.end());
            }
            const SpirvCode& code = shaders::variant("matmul_quant", {{"Q8_0", a.quant == QuantFormat::Q8_0},
                                                                      {"Q4_0", a.quant == QuantFormat::Q4_0},
                                                                      {"ROWDOT", plan.kernel == MatmulKernel::RowDot},
                                                                      {"BLOCKED", plan.kernel == MatmulKernel::Blocked},
                                                                      {"WIDE64", vector_loads && plan.wide_loads},
                                                                      {"BIAS_F16", f16 && !plan.separate_epilogue},
                                                                      {"SCALAR", !vector_loads},
                                                                      {"INTDOT", plan.int_dot},
                                                                      {"SCATTER", scatter_main},
                                                                      {"NO_EPILOGUE", plan.separate_epilogue}});
            p = &ctx.pipeline(
                PipelineDesc{.code = &code,
                             .workgroup_size = {plan.workgroup_size, 1, 1},
                             .constants = constants,
                             .push_constant_layout = MatmulQuantPush::layout,
                             .binding_count = plan.separate_epilogue ? kSeparateEpilogueBindings
                                              : scatter_main         ? kScatterMatmulQuantBindings
                                                                     : kQuantBindings,
                             .required_subgroup_size = plan.kernel == MatmulKernel::RowDot ? plan.subgroup_size : 0});
        }
        return *p;
    };
    const ReducePass reduce = split ? reduce_pass(ctx, f16, a) : ReducePass{};
    const std::uint32_t flags = epilogue_flags(a);
    // The integer dot-product path quantizes each row piece of X into scratch first (the
    // pre-pass runs once per row piece, not per column piece). Its pipelines are made only
    // when the plan took it, that is where shaderIntegerDotProduct is enabled.
    const std::uint32_t row_blocks = a.k / kQuantBlock;
    const std::uint32_t quant_x_wg =
        std::min({kQuantXWorkgroup, limits.workgroup_invocations, limits.workgroup_size[0], std::bit_ceil(row_blocks)});
    const Pipeline* quant_x = plan.int_dot
                                  ? &ctx.pipeline(PipelineDesc{.code = &shaders::variant("matmul_quant_x", {}),
                                                               .workgroup_size = {quant_x_wg, 1, 1},
                                                               .push_constant_layout = MatmulQuantXPush::layout,
                                                               .binding_count = 2})
                                  : nullptr;
    const std::uint64_t partials_first = plan.xq_scratch_bytes / 4;

    for (std::uint32_t m0 = 0; m0 < a.m; m0 += plan.rows_per_piece) {
        const std::uint32_t mc = std::min(plan.rows_per_piece, a.m - m0);
        const ElementBinding x_float =
            bind_elements(limits, a.x, std::uint64_t{m0} * a.k, std::uint64_t{mc} * a.k, 4, "matmul", "X");
        ElementBinding x = x_float;  // what the matmul reads: X, or X quantized
        if (plan.int_dot) {
            x = bind_elements(limits, a.scratch, 0, quantized_x_words(mc, a.k), 4, "matmul", "scratch (quantized X)");
            const MatmulQuantXPush qpush{.m = mc, .k = a.k, .x_base = x_float.base, .q_base = x.base};
            const Binding qbindings[] = {{x_float.range, Access::Read}, {x.range, Access::Write}};
            list.dispatch(Dispatch{.pipeline = quant_x,
                                   .bindings = qbindings,
                                   .push_constants = push_bytes(qpush),
                                   .groups = {static_cast<std::uint32_t>(ceil_div(row_blocks, quant_x_wg)), mc, 1},
                                   .label = "matmul quantize X"});
        }
        for (std::uint32_t n0 = 0; n0 < a.n; n0 += plan.cols_per_piece) {
            const std::uint32_t nc = std::min(plan.cols_per_piece, a.n - n0);
            const ElementBinding w =
                bind_elements(limits, a.w, n0 * row_words, nc * row_words, 4, "matmul", "W values");
            const ElementBinding s =
                bind_elements(limits, a.scales, n0 * row_scales, nc * row_scales, 2, "matmul", "W scales");
            const EpilogueBindings e = bind_epilogue(limits, a, m0, mc, n0, nc, bsize, x);
            const ElementBinding &y = e.y, &bias = e.bias, &res = e.residual;
            std::uint32_t bg = plan.blocks_per_step;
            while (s.base % bg != 0) {
                bg /= 2;
            }
            const Pipeline& main = pipeline(x.base % 4 == 0 && w.base % 4 == 0, bg);
            MatmulQuantPush push{.m = mc,
                                 .n = nc,
                                 .k = a.k,
                                 .ldy = a.n,
                                 .x_base = x.base,
                                 .w_base = w.base,
                                 .s_base = s.base,
                                 .bias_base = has_bias ? bias.base : 0,
                                 .res_base = has_residual ? res.base : 0,
                                 .y_base = y.base,
                                 .k_split = plan.k_split,
                                 .flags = flags};
            set_epilogue_push(push, a, m0, n0);
            const std::uint32_t column_tile = plan.kernel == MatmulKernel::RowDot ? plan.block_n * plan.column_groups
                                                                                  : plan.block_n * plan.workgroup_size;
            const GroupCount groups{static_cast<std::uint32_t>(ceil_div(nc, column_tile)),
                                    static_cast<std::uint32_t>(ceil_div(mc, plan.block_m)), plan.n_splits};
            if (!split) {
                std::vector<Binding> bindings = {{x.range, Access::Read},   {w.range, Access::Read},
                                                 {s.range, Access::Read},   {bias.range, Access::Read},
                                                 {res.range, Access::Read}, {y.range, Access::Write}};
                bindings.insert(bindings.end(), scatter.begin(), scatter.end());
                list.dispatch(Dispatch{.pipeline = &main,
                                       .bindings = bindings,
                                       .push_constants = push_bytes(push),
                                       .groups = groups,
                                       .label = label});
                continue;
            }
            const ElementBinding partials = bind_elements(
                limits, a.scratch, partials_first, std::uint64_t{plan.n_splits} * mc * nc, 4, "matmul", "scratch");
            MatmulQuantPush partial_push = push;
            partial_push.flags = VKF_MATMUL_FLAG_PARTIALS;
            partial_push.y_base = partials.base;
            std::vector<Binding> bindings = {{x.range, Access::Read}, {w.range, Access::Read}, {s.range, Access::Read}};
            if (!plan.separate_epilogue) {  // bias and residual: bound, not read
                bindings.insert(bindings.end(), {{x.range, Access::Read}, {x.range, Access::Read}});
            }
            bindings.push_back({partials.range, Access::Write});
            list.dispatch(Dispatch{.pipeline = &main,
                                   .bindings = bindings,
                                   .push_constants = push_bytes(partial_push),
                                   .groups = groups,
                                   .label = label});
            MatmulPush reduce_push{.m = mc,
                                   .n = nc,
                                   .k = a.k,
                                   .ldy = a.n,
                                   .bias_base = push.bias_base,
                                   .res_base = push.res_base,
                                   .y_base = y.base,
                                   .n_splits = plan.n_splits,
                                   .flags = flags};
            set_epilogue_push(reduce_push, a, m0, n0);
            dispatch_reduce(list, reduce, reduce_push, partials, has_bias ? &bias.range : nullptr,
                            (a.scatter || has_residual) ? &res.range : nullptr, y.range, a);
        }
    }
}

}  // namespace vkf::matmul_detail
