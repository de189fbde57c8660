// The matmul's recording, one routine for every weight format: the pieces, the epilogue
// (QKV scatter included), the fused LayerNorm, the partial sums and the split-K reduce
// pass. What differs between formats comes from their WeightSource (matmul_internal.hpp).

#include "host/ops/matmul.hpp"

#include "base/error.hpp"
#include "host/ops/matmul_internal.hpp"
#include "host/util/math.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <span>

namespace vkf {

namespace {

using matmul_detail::kernel_bindings;
using matmul_detail::weight_bindings;

constexpr std::uint32_t kReduceWorkgroup = 64;

std::string shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) {
    return "[" + fmt::to_string(m) + ", " + fmt::to_string(n) + ", " + fmt::to_string(k) + "]";
}

// Storage buffers of the plan's main kernel with the fused epilogue, as if the device had them.
std::uint32_t fused_bindings(MatmulPlan plan, bool scatter, bool x_norm) {
    plan.separate_epilogue = false;
    return kernel_bindings(plan, scatter, x_norm);
}

void check_scatter(const MatmulArgs& a) {
    const QkvScatter& s = *a.scatter;
    const std::string who = "matmul (QKV scatter): ";
    if (s.head_dim == 0 || s.q_heads == 0 || s.kv_heads == 0 || s.head_dim % 2 != 0) {
        throw Error(who + "head_dim (even), q_heads and kv_heads must be set; got " + fmt::to_string(s.head_dim) +
                    ", " + fmt::to_string(s.q_heads) + ", " + fmt::to_string(s.kv_heads));
    }
    if (s.interleaved && s.q_heads != s.kv_heads) {
        throw Error(who + "the interleaved [n_head, 3, head_dim] layout needs as many K/V heads as query heads");
    }
    const std::uint64_t q_cols = std::uint64_t{s.q_heads} * s.head_dim;
    const std::uint64_t kv_cols = std::uint64_t{s.kv_heads} * s.head_dim;
    if (a.n != q_cols + 2 * kv_cols) {
        throw Error(who + "n = " + fmt::to_string(a.n) + " but " + fmt::to_string(s.q_heads) + " query and " +
                    fmt::to_string(s.kv_heads) + " K/V heads of " + fmt::to_string(s.head_dim) + " need " +
                    fmt::to_string(q_cols + 2 * kv_cols));
    }
    if (a.residual.buffer != nullptr) {
        throw Error(who + "a scatter has no residual");
    }
    if (s.cache_dtype != DType::F32 && s.cache_dtype != DType::F16) {
        throw Error(who + "the KV cache is f32 or f16, not " + std::string(to_string(s.cache_dtype)));
    }
    check_tensor(a.y, a.m * q_cols, 4, "matmul", "Q", shape_text({a.m, static_cast<std::uint32_t>(q_cols)}, "f32"));
    const std::uint64_t row_bytes = kv_cols * element_size(s.cache_dtype);
    for (const auto& [name, cache] : {std::pair{"K cache", s.k_cache}, std::pair{"V cache", s.v_cache}}) {
        if (cache.buffer == nullptr || cache.size == 0 || cache.size % row_bytes != 0) {
            throw Error(who + "the " + name + " range must hold whole rows of " + fmt::to_string(kv_cols) + " " +
                        to_string(s.cache_dtype) + " values (" + fmt::to_string(row_bytes) + " bytes each)");
        }
    }
    if (s.k_cache.size != s.v_cache.size) {
        throw Error(who + "the K and V caches differ in size");
    }
    if (s.slots.buffer == nullptr) {
        throw Error(who + "the slots range (the cache row of each of the " + fmt::to_string(a.m) +
                    " rows, uint32) is missing");
    }
    check_tensor(s.slots, a.m, 4, "matmul (QKV scatter)", "slots", shape_text({a.m}, "u32"));
}

// args against the plan that records them: the shape, then the fused work (saying why the
// plan has none where args ask for it), then the tensors.
void check_against_plan(const ComputeLimits& limits, const MatmulPlan& plan, const MatmulArgs& a) {
    if (plan.m != a.m || plan.n != a.n || plan.k != a.k || plan.weight_dtype != a.weight_dtype ||
        plan.quant != a.quant) {
        const auto text = [](std::uint32_t m, std::uint32_t n, std::uint32_t k, DType dtype, QuantFormat quant) {
            return shape(m, n, k) + " " + (quant != QuantFormat::None ? to_string(quant) + std::string(" ") : "") +
                   to_string(dtype);
        };
        throw Error("matmul: the args " + text(a.m, a.n, a.k, a.weight_dtype, a.quant) +
                    " (m, n, k, quant, weight_dtype) differ from the plan's " +
                    text(plan.m, plan.n, plan.k, plan.weight_dtype, plan.quant));
    }
    if (a.activation != Activation::None && a.activation != Activation::GeluTanh &&
        a.activation != Activation::GeluErf) {
        throw Error(std::string("matmul: the epilogue applies no ") + to_string(a.activation) +
                    " (gated units run as record_gated_activation)");
    }
    if (a.scatter) {
        check_scatter(a);
    }
    if (a.scatter && !plan.scatter) {
        const std::string refusal = storage_buffers_shortfall(limits, fused_bindings(plan, true, false),
                                                              "matmul with a QKV scatter (MatmulArgs::scatter)")
                                        .value_or("matmul: MatmulArgs::scatter is set");
        throw Error(refusal + ", and the plan has no scatter (MatmulOptions::scatter, MatmulPlan::scatter; " +
                    plan.describe() + "): run the projection and record_kv_append");
    }
    if (!a.scatter && plan.scatter) {
        throw Error("matmul: the plan scatters (MatmulPlan::scatter) but MatmulArgs::scatter is not set");
    }
    if (a.x_norm && !plan.x_norm) {
        throw Error(
            "matmul: a fused LayerNorm of X (MatmulArgs::x_norm) needs a plan that grants it (MatmulOptions::x_norm, "
            "MatmulPlan::x_norm: the row-dot kernel of dense weights with the fused epilogue and " +
            fmt::to_string(fused_bindings(plan, plan.scatter, true)) +
            " storage buffers, and k <= " + fmt::to_string(kLayerNormFusionMaxK) +
            " unless the kernel is forced); the plan is " + plan.describe() + " (run record_layernorm first)");
    }
    if (!a.x_norm && plan.x_norm) {
        throw Error("matmul: the plan fuses a LayerNorm of X (MatmulPlan::x_norm) but MatmulArgs::x_norm is not set");
    }
    // A plan made for another device.
    check_storage_buffers(limits, kernel_bindings(plan, plan.scatter, plan.x_norm), "matmul (" + plan.describe() + ")");
    const auto bsize = static_cast<std::uint32_t>(element_size(a.weight_dtype));
    check_tensor(a.x, std::uint64_t{a.m} * a.k, 4, "matmul", "X", shape_text({a.m, a.k}, "f32"));
    if (!a.scatter) {
        check_tensor(a.y, std::uint64_t{a.m} * a.n, 4, "matmul", "Y", shape_text({a.m, a.n}, "f32"));
    }
    if (a.bias.buffer != nullptr) {
        check_tensor(a.bias, a.n, bsize, "matmul", "bias", shape_text({a.n}, to_string(a.weight_dtype)));
    }
    if (a.residual.buffer != nullptr) {
        check_tensor(a.residual, std::uint64_t{a.m} * a.n, 4, "matmul", "residual", shape_text({a.m, a.n}, "f32"));
    }
}

// After the weights' own checks (WeightSource), so that a bad tensor is named first.
void check_scratch(const MatmulPlan& plan, const MatmulArgs& a) {
    if (plan.scratch_bytes > 0 && (a.scratch.buffer == nullptr || a.scratch.size < plan.scratch_bytes)) {
        throw Error("matmul " + shape(a.m, a.n, a.k) + " " +
                    (plan.int_dot        ? "quantizes X"
                     : plan.n_splits > 1 ? "splits K"
                                         : "writes partial sums for its separate epilogue") +
                    " (" + plan.describe() + ") and needs a scratch range of " + fmt::to_string(plan.scratch_bytes) +
                    " bytes (matmul_scratch_bytes); got " +
                    fmt::to_string(a.scratch.buffer == nullptr ? 0 : a.scratch.size));
    }
}

std::uint32_t epilogue_flags(const MatmulArgs& a) {
    std::uint32_t flags = 0;
    flags |= a.activation == Activation::GeluTanh ? VKF_MATMUL_FLAG_GELU_TANH : 0;
    flags |= a.activation == Activation::GeluErf ? VKF_MATMUL_FLAG_GELU_ERF : 0;
    flags |= a.bias.buffer != nullptr ? VKF_MATMUL_FLAG_BIAS : 0;
    flags |= a.residual.buffer != nullptr ? VKF_MATMUL_FLAG_RESIDUAL : 0;
    flags |= a.clamp ? VKF_MATMUL_FLAG_CLAMP : 0;
    flags |= a.x_norm && a.x_norm->bias.buffer != nullptr ? VKF_MATMUL_FLAG_LN_BIAS : 0;
    if (a.scatter) {
        flags |= a.scatter->interleaved ? VKF_MATMUL_FLAG_SCATTER_INTERLEAVED : 0;
        flags |= a.scatter->cache_dtype == DType::F16 ? VKF_MATMUL_FLAG_CACHE_F16 : 0;
    }
    return flags;
}

// The scatter's K and V caches into `b`, a dispatch's bindings (shaders/interface/
// matmul_bindings.h) after `weights` weight bindings; nothing without a scatter.
void bind_scatter(std::span<Binding> b, std::uint32_t weights, const MatmulArgs& a) {
    if (!a.scatter) {
        return;
    }
    // fp16 caches are written with atomics, which read the word.
    const Access access = a.scatter->cache_dtype == DType::F16 ? Access::ReadWrite : Access::Write;
    b[VKF_MATMUL_BINDING_K_CACHE(weights)] = {a.scatter->k_cache, access};
    b[VKF_MATMUL_BINDING_V_CACHE(weights)] = {a.scatter->v_cache, access};
}

// The SCATTER variants' specialization constant (none without a scatter).
std::vector<SpecConstant> scatter_constants(const MatmulArgs& a) {
    if (!a.scatter) {
        return {};
    }
    return {{VKF_MATMUL_SPEC_SCATTER_HEAD_DIM, a.scatter->head_dim}};
}

// The epilogue's push members (interface/matmul_flags.h) for the piece whose first row and
// column are m0 and n0.
void set_epilogue_push(MatmulPush& push, const MatmulArgs& a, std::uint32_t m0, std::uint32_t n0) {
    push.row0 = m0;
    push.col0 = n0;
    push.clamp_to = a.clamp.value_or(0.0f);
    push.ln_eps = a.x_norm ? a.x_norm->eps : 0.0f;
    if (a.scatter) {
        const QkvScatter& s = *a.scatter;
        push.q_heads = s.q_heads;
        push.kv_heads = s.kv_heads;
        // Whole rows (check_scatter), at most maxStorageBufferRange bytes: fits 32 bits.
        push.cache_rows = static_cast<std::uint32_t>(
            s.k_cache.size / (std::uint64_t{s.kv_heads} * s.head_dim * element_size(s.cache_dtype)));
    }
}

// Y, bias and residual of the piece of rows m0..m0+mc and columns n0..n0+nc: Y and the
// residual a span with row stride n. An absent bias or residual gets `unused` (a binding
// the shader never reads) and base 0. A scatter binds Q and the caches whole (it places
// every element itself) and its slots where the residual would be.
struct EpilogueBindings {
    ElementBinding y, bias, residual;
};
EpilogueBindings bind_epilogue(const ComputeLimits& limits, const MatmulArgs& a, std::uint32_t m0, std::uint32_t mc,
                               std::uint32_t n0, std::uint32_t nc, const ElementBinding& unused) {
    const auto bias_bytes = static_cast<std::uint32_t>(element_size(a.weight_dtype));
    EpilogueBindings b{.y = {a.y, 0}, .bias = {unused.range, 0}, .residual = {unused.range, 0}};
    if (a.bias.buffer != nullptr) {
        b.bias = bind_elements(limits, a.bias, n0, nc, bias_bytes, "matmul", "bias");
    }
    if (a.scatter) {
        b.residual = bind_elements(limits, a.scatter->slots, 0, a.m, 4, "matmul", "slots");
        return b;
    }
    const std::uint64_t y_first = std::uint64_t{m0} * a.n + n0;
    const std::uint64_t y_count = std::uint64_t{mc - 1} * a.n + nc;
    b.y = bind_elements(limits, a.y, y_first, y_count, 4, "matmul", "Y");
    if (a.residual.buffer != nullptr) {
        b.residual = bind_elements(limits, a.residual, y_first, y_count, 4, "matmul", "residual");
    }
    return b;
}

// A fused LayerNorm's weight and bias (the weight again when there is no bias), bound in
// whole words (an odd k of fp16 values) from the tensors' first element: the kernel indexes
// them from 0 and reads 8 at a time where k allows. Empty without a fused LayerNorm.
std::vector<Binding> layernorm_bindings(const ComputeLimits& limits, const MatmulArgs& a) {
    if (!a.x_norm) {
        return {};
    }
    const auto wsize = static_cast<std::uint32_t>(element_size(a.weight_dtype));
    const char* wtype = to_string(a.weight_dtype);
    check_tensor(a.x_norm->weight, a.k, wsize, "matmul", "LayerNorm weight", shape_text({a.k}, wtype));
    if (a.x_norm->bias.buffer != nullptr) {
        check_tensor(a.x_norm->bias, a.k, wsize, "matmul", "LayerNorm bias", shape_text({a.k}, wtype));
    }
    const auto bind_norm = [&](const BufferRange& r, const char* what) {
        const ElementBinding b = bind_elements(limits, r, 0, a.k, wsize, "matmul", what);
        if (b.base != 0 || r.offset % 16 != 0) {
            throw Error(std::string("matmul: a fused LayerNorm's ") + what +
                        " must start on a 16-byte boundary that the device can bind (offset " +
                        fmt::to_string(r.offset) + ")");
        }
        return b.range;
    };
    const BufferRange weight = bind_norm(a.x_norm->weight, "LayerNorm weight");
    return {{weight, Access::Read},
            {a.x_norm->bias.buffer != nullptr ? bind_norm(a.x_norm->bias, "LayerNorm bias") : weight, Access::Read}};
}

// The split-K second pass (matmul.comp REDUCE): adds the partial sums and applies the
// epilogue; the SCATTER variant when `a` scatters (its residual binding is the slots, and
// K and V follow Y).
struct ReducePass {
    const Pipeline* pipeline = nullptr;
    std::uint32_t workgroup_size = 0;
};
ReducePass reduce_pass(Context& ctx, const MatmulArgs& a) {
    const bool scatter = a.scatter.has_value();
    const ComputeLimits& limits = ctx.limits();
    ReducePass pass;
    pass.workgroup_size = std::min({kReduceWorkgroup, limits.workgroup_invocations, limits.workgroup_size[0]});
    const bool bias_f16 = a.weight_dtype == DType::F16;
    pass.pipeline = &ctx.pipeline(
        PipelineDesc{.code = &shaders::variant("matmul", {"REDUCE", {"WEIGHTS_F16", bias_f16}, {"SCATTER", scatter}}),
                     .workgroup_size = {pass.workgroup_size, 1, 1},
                     .constants = scatter_constants(a),
                     .push_constant_layout = MatmulPush::layout,
                     .binding_count = VKF_MATMUL_BINDING_COUNT(0u, scatter ? 1u : 0u, 0u)});
    return pass;
}

// Bias, residual and Y into `b`, a dispatch's bindings after `weights` weight bindings.
void bind_epilogue_buffers(std::span<Binding> b, std::uint32_t weights, const EpilogueBindings& e) {
    b[VKF_MATMUL_BINDING_BIAS(weights)] = {e.bias.range, Access::Read};
    b[VKF_MATMUL_BINDING_RESIDUAL(weights)] = {e.residual.range, Access::Read};
    b[VKF_MATMUL_BINDING_Y(weights)] = {e.y.range, Access::Write};
}

// `push` holds the piece's epilogue (m, n, ldy, bias_base, res_base, y_base, n_splits, flags).
void dispatch_reduce(CommandList& list, const ReducePass& pass, MatmulPush push, const ElementBinding& partials,
                     const EpilogueBindings& e, const MatmulArgs& a) {
    push.x_base = partials.base;  // the reduce pass has no X
    // The partial sums in X's binding, and no weights.
    std::vector<Binding> bindings(VKF_MATMUL_BINDING_COUNT(0u, a.scatter ? 1u : 0u, 0u));
    bindings[VKF_MATMUL_BINDING_X] = {partials.range, Access::Read};
    bind_epilogue_buffers(bindings, 0, e);
    bind_scatter(bindings, 0, a);
    list.dispatch(Dispatch{.pipeline = pass.pipeline,
                           .bindings = bindings,
                           .push_constants = push_bytes(push),
                           .groups = {static_cast<std::uint32_t>(ceil_div(push.n, pass.workgroup_size)), push.m, 1},
                           .label = "matmul reduce"});
}

}  // namespace

namespace matmul_detail {

ElementBinding WeightSource::prepare_x(CommandList& /*list*/, const ElementBinding& x, std::uint32_t /*mc*/) {
    return x;
}

const Pipeline& kernel_pipeline(Context& ctx, const MatmulPlan& plan, const MatmulArgs& args, const SpirvCode& code,
                                std::vector<SpecConstant> constants, const PushConstantLayout& layout,
                                bool scatter_main) {
    if (scatter_main) {
        const std::vector<SpecConstant> more = scatter_constants(args);
        constants.insert(constants.end(), more.begin(), more.end());
    }
    return ctx.pipeline(PipelineDesc{
        .code = &code,
        .workgroup_size = {plan.workgroup_size, 1, 1},
        .constants = constants,
        .push_constant_layout = layout,
        .binding_count = kernel_bindings(plan, scatter_main, plan.x_norm),
        .shared_memory_bytes = plan.shared_bytes,
        .required_subgroup_size =
            plan.kernel == MatmulKernel::RowDot || plan.kernel == MatmulKernel::CoopMat ? plan.subgroup_size : 0});
}

}  // namespace matmul_detail

void record_matmul(Context& ctx, CommandList& list, const MatmulPlan& plan, const MatmulArgs& a) {
    const ComputeLimits& limits = ctx.limits();
    check_against_plan(limits, plan, a);
    const std::vector<Binding> ln_bindings = layernorm_bindings(limits, a);
    // The separate epilogue's kernels write partial sums, as split K does; the slices write
    // plain partial sums and the reduce pass scatters.
    const bool split = plan.n_splits > 1 || plan.separate_epilogue;
    const bool scatter_main = plan.scatter && !split;
    const std::unique_ptr<matmul_detail::WeightSource> source =
        plan.quant != QuantFormat::None ? matmul_detail::quant_weights(ctx, plan, a, scatter_main)
                                        : matmul_detail::dense_weights(ctx, plan, a, scatter_main);
    check_scratch(plan, a);
    const ReducePass reduce = split ? reduce_pass(ctx, a) : ReducePass{};
    const std::uint32_t weights = weight_bindings(plan);
    const std::uint32_t ln_scatter = scatter_main ? 1u : 0u;  // the LayerNorm follows K and V
    // Fused work shows in GPU profiles under its own name.
    const char* label = a.scatter ? (a.x_norm ? "matmul (LayerNorm, QKV scatter)" : "matmul (QKV scatter)")
                                  : (a.x_norm ? "matmul (LayerNorm)" : "matmul");
    const std::uint32_t flags = epilogue_flags(a);
    // Partial sums come after the quantized X of the integer dot-product path.
    const std::uint64_t partials_first = plan.xq_scratch_bytes / 4;

    for (std::uint32_t m0 = 0; m0 < a.m; m0 += plan.rows_per_piece) {
        const std::uint32_t mc = std::min(plan.rows_per_piece, a.m - m0);
        const ElementBinding x = source->prepare_x(
            list, bind_elements(limits, a.x, std::uint64_t{m0} * a.k, std::uint64_t{mc} * a.k, 4, "matmul", "X"), mc);
        for (std::uint32_t n0 = 0; n0 < a.n; n0 += plan.cols_per_piece) {
            const std::uint32_t nc = std::min(plan.cols_per_piece, a.n - n0);
            const matmul_detail::WeightPiece w = source->piece(x, n0, nc);
            const EpilogueBindings e = bind_epilogue(limits, a, m0, mc, n0, nc, x);
            MatmulPush push{.m = mc,
                            .n = nc,
                            .k = a.k,
                            .ldy = a.n,
                            .x_base = x.base,
                            .w_base = w.w_base,
                            .bias_base = e.bias.base,
                            .res_base = e.residual.base,
                            .y_base = e.y.base,
                            .k_split = plan.k_split,
                            .n_splits = plan.n_splits,
                            .flags = flags | w.load_flags};
            set_epilogue_push(push, a, m0, n0);
            const GroupCount groups = matmul_detail::piece_groups(plan, mc, nc);
            // Each buffer at its slot (shaders/interface/matmul_bindings.h).
            std::vector<Binding> bindings(kernel_bindings(plan, scatter_main, plan.x_norm));
            bindings[VKF_MATMUL_BINDING_X] = {x.range, Access::Read};
            std::copy(w.bindings.begin(), w.bindings.end(), bindings.begin() + VKF_MATMUL_BINDING_W);
            if (!ln_bindings.empty()) {
                bindings[VKF_MATMUL_BINDING_LN_WEIGHT(weights, ln_scatter)] = ln_bindings[0];
                bindings[VKF_MATMUL_BINDING_LN_BIAS(weights, ln_scatter)] = ln_bindings[1];
            }
            if (!split) {
                bind_epilogue_buffers(bindings, weights, e);
                bind_scatter(bindings, weights, a);
                list.dispatch(Dispatch{.pipeline = w.pipeline,
                                       .bindings = bindings,
                                       .push_constants = source->push(push, w),
                                       .groups = groups,
                                       .label = label});
                continue;
            }
            const ElementBinding partials = bind_elements(
                limits, a.scratch, partials_first, std::uint64_t{plan.n_splits} * mc * nc, 4, "matmul", "scratch");
            MatmulPush partial_push = push;
            partial_push.flags = w.load_flags | (flags & VKF_MATMUL_FLAG_LN_BIAS) | VKF_MATMUL_FLAG_PARTIALS;
            partial_push.y_base = partials.base;
            if (plan.separate_epilogue) {
                bindings[VKF_MATMUL_BINDING_PARTIALS(weights)] = {partials.range, Access::Write};
            } else {  // the partial sums in Y's binding; bias and residual: bound, not read
                bindings[VKF_MATMUL_BINDING_BIAS(weights)] = {x.range, Access::Read};
                bindings[VKF_MATMUL_BINDING_RESIDUAL(weights)] = {x.range, Access::Read};
                bindings[VKF_MATMUL_BINDING_Y(weights)] = {partials.range, Access::Write};
            }
            list.dispatch(Dispatch{.pipeline = w.pipeline,
                                   .bindings = bindings,
                                   .push_constants = source->push(partial_push, w),
                                   .groups = groups,
                                   .label = label});
            MatmulPush reduce_push = push;
            reduce_push.flags = flags;
            dispatch_reduce(list, reduce, reduce_push, partials, e, a);
        }
    }
}

void record_matmul(Context& ctx, CommandList& list, const MatmulArgs& args) {
    MatmulOptions options = args.options;
    options.scatter = args.scatter.has_value();
    options.x_norm = args.x_norm.has_value();
    const MatmulPlan plan =
        plan_matmul(matmul_device(ctx), args.m, args.n, args.k, args.weight_dtype, options, args.quant);
    record_matmul(ctx, list, plan, args);
}

}  // namespace vkf
