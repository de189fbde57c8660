// The matmul with block-quantized weights (shaders/matmul_quant.comp): its kernels' plan
// and its WeightSource, recorded by matmul_record.cpp. The K split, the pieces and the
// reduce pass are the dense matmul's (matmul_internal.hpp).

#include "base/error.hpp"
#include "host/ops/matmul_internal.hpp"
#include "host/util/math.hpp"
#include "shaders/interface/matmul_quant_x.h"
#include "shaders/variants.hpp"

#include <fmt/format.h>

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
    return "[" + fmt::to_string(m) + ", " + fmt::to_string(n) + ", " + fmt::to_string(k) + "]";
}

}  // namespace

MatmulPlan plan_matmul_quant(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                             DType bias_dtype, const MatmulOptions& options, QuantFormat quant) {
    const ComputeLimits& limits = device.limits;
    if (bias_dtype != DType::F32 && bias_dtype != DType::F16) {
        throw Error(std::string("matmul: the bias of quantized weights (weight_dtype) must be f32 or f16, not ") +
                    to_string(bias_dtype));
    }
    check_storage_buffers(limits, kSeparateEpilogueBindings,
                          std::string("matmul with ") + to_string(quant) + " weights");
    if (is_kquant(quant)) {
        return plan_matmul_kquant(device, m, n, k, options, quant);
    }
    if (quant != QuantFormat::Q8_0 && quant != QuantFormat::Q4_0) {
        throw Error("matmul: unknown block format " + fmt::to_string(static_cast<std::uint32_t>(quant)));
    }
    if (k % kQuantBlock != 0) {
        throw Error("matmul " + shape(m, n, k) + " with " + to_string(quant) + " weights: k = " + fmt::to_string(k) +
                    " is not a multiple of the block size " + fmt::to_string(kQuantBlock) +
                    "; W [n, k] must be whole blocks of 32 along k");
    }
    // Both kernels bind X, the values, the scales, bias, residual and Y; with fewer storage
    // buffers they write partial sums (X, values, scales, P) and matmul.comp's reduce pass
    // (P, bias, residual, Y) applies the epilogue.
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
    // Both float kernels have an fp16 form (matmul_quant_math.glsl); the int8 path does not.
    plan.f16_arithmetic = !int_dot && f16_arithmetic(device, options);
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

namespace {

class QuantWeights final : public WeightSource {
public:
    QuantWeights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& a, bool scatter_main)
        : ctx_(ctx),
          limits_(ctx.limits()),
          plan_(plan),
          a_(a),
          scatter_main_(scatter_main),
          row_words_(quant_row_bytes(a.quant, a.k) / 4),
          row_scales_(quant_row_scales(a.k)) {
        const std::string wtype = to_string(a.quant);
        // The values plane is bound and read in 32-bit words: its offset must be a multiple of 4.
        check_tensor(a.w, a.n * row_words_, 4, "matmul", "W values",
                     shape_text({a.n, static_cast<std::uint32_t>(4 * row_words_)}, "bytes (" + wtype + ")"));
        check_tensor(a.scales, a.n * row_scales_, 2, "matmul", "W scales",
                     shape_text({a.n, static_cast<std::uint32_t>(row_scales_)}, "f16 (" + wtype + ")"));
        // Its pipelines are made only where the plan took the integer dot-product path, that
        // is where shaderIntegerDotProduct is enabled.
        if (plan.int_dot) {
            quant_x_wg_ = std::min({kQuantXWorkgroup, limits_.workgroup_invocations, limits_.workgroup_size[0],
                                    std::bit_ceil(a.k / kQuantBlock)});
            quant_x_ = &ctx.pipeline(PipelineDesc{.code = &shaders::variant("matmul_quant_x", {}),
                                                  .workgroup_size = {quant_x_wg_, 1, 1},
                                                  .push_constant_layout = MatmulQuantXPush::layout,
                                                  .binding_count = 2});
        }
    }

    // The pre-pass runs once per row piece, not per column piece.
    ElementBinding prepare_x(CommandList& list, const ElementBinding& x_float, std::uint32_t mc) override {
        if (!plan_.int_dot) {
            return x_float;
        }
        const ElementBinding xq =
            bind_elements(limits_, a_.scratch, 0, quantized_x_words(mc, a_.k), 4, "matmul", "scratch (quantized X)");
        const MatmulQuantXPush push{.m = mc, .k = a_.k, .x_base = x_float.base, .q_base = xq.base};
        const Binding bindings[] = {{x_float.range, Access::Read}, {xq.range, Access::Write}};
        list.dispatch(Dispatch{.pipeline = quant_x_,
                               .bindings = bindings,
                               .push_constants = push_bytes(push),
                               .groups = {static_cast<std::uint32_t>(ceil_div(a_.k / kQuantBlock, quant_x_wg_)), mc, 1},
                               .label = "matmul quantize X"});
        return xq;
    }

    WeightPiece piece(const ElementBinding& x, std::uint32_t n0, std::uint32_t nc) override {
        const ElementBinding w =
            bind_elements(limits_, a_.w, n0 * row_words_, nc * row_words_, 4, "matmul", "W values");
        const ElementBinding s =
            bind_elements(limits_, a_.scales, n0 * row_scales_, nc * row_scales_, 2, "matmul", "W scales");
        // Scales are read blocks_per_step at a time where a piece's scales start on a
        // multiple of it, else fewer.
        std::uint32_t bg = plan_.blocks_per_step;
        while (s.base % bg != 0) {
            bg /= 2;
        }
        return WeightPiece{.bindings = {{w.range, Access::Read}, {s.range, Access::Read}},
                           .w_base = w.base,
                           .s_base = s.base,
                           .pipeline = &pipeline(x.base % 4 == 0 && w.base % 4 == 0, bg)};
    }

    std::span<const std::byte> push(const MatmulPush& p, const WeightPiece& piece) override {
        push_ = quant_push(p, piece.s_base);
        return push_bytes(push_);
    }

private:
    // Rows of X and W that start on 16 bytes are read as vectors; others (tensors at
    // unaligned offsets) by the SCALAR variant. Pipelines are made when a piece needs them.
    const Pipeline& pipeline(bool vector_loads, std::uint32_t bg) {
        const Pipeline*& p = pipelines_[vector_loads ? 1 : 0][std::countr_zero(bg)];
        if (p == nullptr) {
            std::vector<SpecConstant> constants = {{VKF_MATMUL_QUANT_SPEC_RM, plan_.block_m},
                                                   {VKF_MATMUL_QUANT_SPEC_RN, plan_.block_n},
                                                   {VKF_MATMUL_QUANT_SPEC_BG, bg}};
            if (plan_.kernel == MatmulKernel::RowDot) {
                constants.push_back({VKF_MATMUL_QUANT_SPEC_RG, plan_.column_groups});
            }
            const bool f16 = a_.weight_dtype == DType::F16;
            const SpirvCode& code =
                shaders::variant("matmul_quant", {{"Q8_0", a_.quant == QuantFormat::Q8_0},
                                                  {"Q4_0", a_.quant == QuantFormat::Q4_0},
                                                  {"ROWDOT", plan_.kernel == MatmulKernel::RowDot},
                                                  {"BLOCKED", plan_.kernel == MatmulKernel::Blocked},
                                                  {"WIDE64", vector_loads && plan_.wide_loads},
                                                  {"BIAS_F16", f16 && !plan_.separate_epilogue},
                                                  {"SCALAR", !vector_loads},
                                                  {"INTDOT", plan_.int_dot},
                                                  {"F16_MATH", plan_.f16_arithmetic},
                                                  {"SCATTER", scatter_main_},
                                                  {"NO_EPILOGUE", plan_.separate_epilogue}});
            p = &kernel_pipeline(ctx_, plan_, a_, code, std::move(constants), MatmulQuantPush::layout, scatter_main_);
        }
        return *p;
    }

    Context& ctx_;
    const ComputeLimits& limits_;
    const MatmulPlan& plan_;
    const MatmulArgs& a_;
    bool scatter_main_;
    std::uint64_t row_words_, row_scales_;
    const Pipeline* pipelines_[2][3] = {};
    const Pipeline* quant_x_ = nullptr;
    std::uint32_t quant_x_wg_ = 0;
    MatmulQuantPush push_{};
};

}  // namespace

std::unique_ptr<WeightSource> quant_weights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& args,
                                            bool scatter_main) {
    if (is_kquant(args.quant)) {
        return kquant_weights(ctx, plan, args, scatter_main);
    }
    return std::make_unique<QuantWeights>(ctx, plan, args, scatter_main);
}

MatmulQuantPush quant_push(const MatmulPush& p, std::uint32_t s_base) {
    return MatmulQuantPush{.m = p.m,
                           .n = p.n,
                           .k = p.k,
                           .ldy = p.ldy,
                           .x_base = p.x_base,
                           .w_base = p.w_base,
                           .s_base = s_base,
                           .bias_base = p.bias_base,
                           .res_base = p.res_base,
                           .y_base = p.y_base,
                           .k_split = p.k_split,
                           .flags = p.flags,
                           .row0 = p.row0,
                           .col0 = p.col0,
                           .cache_rows = p.cache_rows,
                           .q_heads = p.q_heads,
                           .kv_heads = p.kv_heads,
                           .clamp_to = p.clamp_to,
                           .ln_eps = p.ln_eps};
}

}  // namespace vkf::matmul_detail
