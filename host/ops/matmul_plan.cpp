// The matmul's plan: what every weight format shares (the K split, the pieces, the fused
// work granted) around each format's kernels (matmul_dense.cpp, matmul_quant.cpp).

#include "host/ops/matmul.hpp"

#include "base/error.hpp"
#include "host/ops/matmul_internal.hpp"
#include "host/util/math.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace vkf {

namespace {

// Split K for parallelism when the output alone gives fewer workgroups than this (a CPU
// device has a thread per core, a GPU many more lanes to fill).
constexpr std::uint64_t kTargetWorkgroupsGpu = 128;
constexpr std::uint64_t kTargetWorkgroupsCpu = 16;
constexpr std::uint32_t kMinSliceK = 512;
constexpr std::uint32_t kMaxParallelSplits = 16;

// The longest K slice whose loops stay within `budget`, a multiple of `granule`.
std::uint64_t max_slice(const MatmulPlan& p, std::uint64_t budget, std::uint32_t granule,
                        matmul_detail::LoopCount count) {
    std::uint64_t lo = granule, hi = std::uint64_t{1} << 40;
    if (count(p, lo) > budget) {
        return granule;
    }
    while (hi - lo > granule) {  // binary search over multiples of granule
        const std::uint64_t mid = (lo + hi) / 2 / granule * granule;
        (count(p, mid) <= budget ? lo : hi) = mid;
    }
    return lo;
}

// The answers to MatmulOptions::scatter and x_norm (MatmulPlan::scatter, x_norm).
void grant_fusions(MatmulPlan& plan, const ComputeLimits& limits, const MatmulOptions& options) {
    const std::uint32_t buffers = limits.storage_buffers;
    plan.scatter =
        options.scatter && !plan.separate_epilogue && buffers >= matmul_detail::kernel_bindings(plan, true, false);
    // A forced kernel is the caller's choice of cost (tests cover the kernel at every k).
    const bool pays = options.kernel != MatmulKernel::Auto || plan.k <= kLayerNormFusionMaxK;
    plan.x_norm = options.x_norm && plan.kernel == MatmulKernel::RowDot && plan.quant == QuantFormat::None &&
                  !plan.separate_epilogue && pays &&
                  buffers >= matmul_detail::kernel_bindings(plan, plan.scatter, true);
}

}  // namespace

namespace matmul_detail {

std::uint32_t weight_bindings(const MatmulPlan& plan) {
    return plan.quant == QuantFormat::None ? VKF_MATMUL_WEIGHTS_DENSE : VKF_MATMUL_WEIGHTS_QUANT;
}

std::uint32_t kernel_bindings(const MatmulPlan& plan, bool scatter, bool x_norm) {
    const std::uint32_t weights = weight_bindings(plan);
    if (plan.separate_epilogue) {
        return VKF_MATMUL_NO_EPILOGUE_BINDING_COUNT(weights);
    }
    return VKF_MATMUL_BINDING_COUNT(weights, scatter ? 1u : 0u, x_norm ? 1u : 0u);
}

std::uint64_t target_workgroups(const MatmulDevice& device) {
    return device.cpu ? kTargetWorkgroupsCpu : kTargetWorkgroupsGpu;
}

bool f16_arithmetic(const MatmulDevice& device, const MatmulOptions& options) {
    // llvmpipe emulates fp16 (converts each operation to fp32 and back): no gain there, and
    // the CPU-tuned kernels stay as measured (vkf-bench's matmul suite shows both).
    const bool wanted =
        options.arithmetic == MatmulArithmetic::F16 || (options.arithmetic == MatmulArithmetic::Auto && !device.cpu);
    return wanted && device.limits.fp16_arithmetic;
}

bool rowdot_fits(const ComputeLimits& limits) {
    return limits.subgroup_ops && limits.subgroup_size_control && limits.subgroup_size > 0 &&
           limits.subgroup_size <= std::min(limits.workgroup_invocations, limits.workgroup_size[0]);
}

std::uint64_t plan_rowdot(MatmulPlan& plan, const MatmulDevice& device, std::uint32_t m, std::uint32_t n,
                          std::uint32_t max_rows, std::uint32_t cols, std::uint32_t max_groups, const char* what) {
    const ComputeLimits& limits = device.limits;
    if (!rowdot_fits(limits)) {
        throw Error(std::string("matmul: the row-dot kernel") + what +
                    " needs subgroup arithmetic in compute shaders, full subgroups of a required size "
                    "(subgroupSizeControl and computeFullSubgroups; not with VKF_LIMITS no_subgroup_size_control) "
                    "and workgroups of at least one subgroup (" +
                    fmt::to_string(limits.subgroup_size) + " invocations)");
    }
    plan.subgroup_size = limits.subgroup_size;
    plan.block_m = std::min(m, max_rows);
    plan.block_n = cols;
    const std::uint32_t fit = std::min(limits.workgroup_invocations, limits.workgroup_size[0]) / plan.subgroup_size;
    std::uint32_t cg = std::bit_floor(std::min(max_groups, fit));
    const std::uint64_t row_blocks = ceil_div(m, plan.block_m);
    while (cg > 1 && ceil_div(n, std::uint64_t{plan.block_n} * cg) * row_blocks < target_workgroups(device)) {
        cg /= 2;  // small outputs: fewer columns per workgroup, more workgroups
    }
    plan.column_groups = cg;
    plan.workgroup_size = cg * plan.subgroup_size;
    return ceil_div(n, std::uint64_t{plan.block_n} * cg) * row_blocks;
}

std::uint64_t plan_blocked(MatmulPlan& plan, const MatmulDevice& device, std::uint32_t m, std::uint32_t n,
                           std::uint32_t rows, std::uint32_t cols, std::uint32_t max_workgroup) {
    const ComputeLimits& limits = device.limits;
    plan.block_m = m == 1 ? 1 : rows;
    plan.block_n = cols;
    const std::uint64_t invocations = ceil_div(n, plan.block_n);
    const std::uint64_t row_blocks = ceil_div(m, plan.block_m);
    // Narrow workgroups when the output is small, so that it still spreads over the device.
    std::uint32_t wg =
        std::bit_floor(std::min({max_workgroup, limits.workgroup_invocations, limits.workgroup_size[0]}));
    while (wg > 8 && ceil_div(invocations, wg) * row_blocks < target_workgroups(device)) {
        wg /= 2;
    }
    plan.workgroup_size = wg;
    return ceil_div(invocations, wg) * row_blocks;
}

void split_k(MatmulPlan& plan, const MatmulDevice& device, std::uint32_t k, std::uint64_t groups, std::uint32_t granule,
             const MatmulOptions& options, LoopCount count) {
    const ComputeLimits& limits = device.limits;
    std::uint64_t splits = std::max<std::uint32_t>(options.force_splits, 1);
    const std::uint64_t target = target_workgroups(device);
    if (options.force_splits == 0 && groups < target && k >= 2 * kMinSliceK) {
        splits = std::min<std::uint64_t>({ceil_div(target, groups), k / kMinSliceK, kMaxParallelSplits});
    }
    if (limits.max_loop_iterations != 0) {
        const std::uint64_t budget = limits.max_loop_iterations / 2;
        splits = std::max(splits, ceil_div(k, max_slice(plan, budget, granule, count)));
    }
    splits = std::min<std::uint64_t>(splits, ceil_div(k, granule));
    plan.k_split = static_cast<std::uint32_t>(round_up(ceil_div(k, splits), granule));
    plan.n_splits = static_cast<std::uint32_t>(ceil_div(k, plan.k_split));
    plan.loop_iterations = count(plan, plan.k_split);
}

void plan_pieces(MatmulPlan& plan, const ComputeLimits& limits, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                 std::uint64_t max_w_rows) {
    const std::uint64_t f_max = max_bound_elements(limits, 4);
    if (k > f_max || max_w_rows == 0) {
        throw Error("matmul: one row of " + fmt::to_string(k) + " elements (k) exceeds maxStorageBufferRange (" +
                    fmt::to_string(limits.storage_buffer_range) + " bytes)");
    }
    std::uint64_t cols = std::min<std::uint64_t>({n, max_w_rows, f_max / plan.n_splits});
    std::uint64_t rows = std::min<std::uint64_t>(m, f_max / k);
    rows = std::min(rows, (f_max - cols) / n + 1);  // Y and R: (rows - 1) * n + cols elements
    rows = std::min(rows, f_max / (plan.n_splits * cols));
    plan.rows_per_piece = static_cast<std::uint32_t>(rows);
    plan.cols_per_piece = static_cast<std::uint32_t>(cols);
    plan.scratch_bytes =
        plan.n_splits > 1 || plan.separate_epilogue ? 4 * std::uint64_t{plan.n_splits} * rows * cols : 0;
}

GroupCount piece_groups(const MatmulPlan& plan, std::uint32_t mc, std::uint32_t nc) {
    std::uint64_t cols = 0, rows = 0;  // of Y per workgroup
    switch (plan.kernel) {
        case MatmulKernel::Tiled:
        case MatmulKernel::CoopMat:
            cols = plan.tile_n;
            rows = plan.tile_m;
            break;
        case MatmulKernel::Gemv:
            cols = 4;
            rows = 1;
            break;
        case MatmulKernel::RowDot:
            cols = std::uint64_t{plan.block_n} * plan.column_groups;
            rows = plan.block_m;
            break;
        default:
            cols = std::uint64_t{plan.block_n} * plan.workgroup_size;
            rows = plan.block_m;
            break;
    }
    return {static_cast<std::uint32_t>(ceil_div(nc, cols)), static_cast<std::uint32_t>(ceil_div(mc, rows)),
            plan.n_splits};
}

}  // namespace matmul_detail

const char* to_string(MatmulKernel k) {
    switch (k) {
        case MatmulKernel::Tiled:
            return "tiled";
        case MatmulKernel::Gemv:
            return "gemv";
        case MatmulKernel::Blocked:
            return "blocked";
        case MatmulKernel::RowDot:
            return "rowdot";
        case MatmulKernel::CoopMat:
            return "coopmat";
        default:
            return "auto";
    }
}

const char* to_string(MatmulArithmetic a) {
    switch (a) {
        case MatmulArithmetic::F32:
            return "f32";
        case MatmulArithmetic::F16:
            return "f16";
        default:
            return "auto";
    }
}

std::string MatmulPlan::describe() const {
    std::string s = std::string(to_string(kernel));
    if (quant != QuantFormat::None) {
        s += std::string(" ") + to_string(quant) + " (" + fmt::to_string(blocks_per_step) + " blocks a step)";
        if (int_dot) {
            s += " int8 dot";
        }
    }
    if (kernel == MatmulKernel::Tiled) {
        s += " " + fmt::to_string(tile_m) + "x" + fmt::to_string(tile_n) + "x" + fmt::to_string(tile_k);
    } else if (kernel == MatmulKernel::CoopMat) {
        const CoopMatShape& c = coopmat.shape;
        s += " " + fmt::to_string(tile_m) + "x" + fmt::to_string(tile_n) + "x" + fmt::to_string(tile_k) + " (" +
             fmt::to_string(coopmat.subgroups_m) + "x" + fmt::to_string(coopmat.subgroups_n) + " subgroups of " +
             fmt::to_string(subgroup_size) + ", each " + fmt::to_string(coopmat.frags_m) + "x" +
             fmt::to_string(coopmat.frags_n) + " matrices of " + fmt::to_string(c.m) + "x" + fmt::to_string(c.n) + "x" +
             fmt::to_string(c.k) + (coopmat.emulated ? ", emulated" : "") + ")";
    } else if (kernel == MatmulKernel::Blocked) {
        s += " " + fmt::to_string(block_m) + "x" + fmt::to_string(block_n) + (wide_loads ? " (64-bit loads)" : "");
    } else if (kernel == MatmulKernel::RowDot) {
        s += " " + fmt::to_string(block_m) + "x" + fmt::to_string(block_n) + "x" + fmt::to_string(column_groups) +
             " (subgroups of " + fmt::to_string(subgroup_size) + (wide_loads ? ", 64-bit loads)" : ")");
    }
    s += ", " + fmt::to_string(workgroup_size) + " invocations, " + fmt::to_string(shared_bytes) + " B shared";
    if (f16_arithmetic) {
        s += ", fp16 arithmetic";
    }
    if (n_splits > 1) {
        s += ", split-K " + fmt::to_string(n_splits) + " x " + fmt::to_string(k_split);
    }
    if (separate_epilogue) {
        s += ", epilogue in the reduce pass";
    }
    if (scatter) {
        s += ", QKV scatter";
    }
    if (x_norm) {
        s += ", LayerNorm of X fused";
    }
    s += ", pieces of " + fmt::to_string(rows_per_piece) + " rows x " + fmt::to_string(cols_per_piece) + " cols, ~" +
         fmt::to_string(loop_iterations) + " loop iterations per invocation";
    return s;
}

MatmulDevice matmul_device(const Context& ctx) {
    // VKF_LIMITS=gpu_matmul: plans as on a GPU (tests run a GPU's decode kernels on lavapipe).
    return MatmulDevice{.limits = ctx.limits(),
                        .cpu = ctx.device_info().type == DeviceType::Cpu && !ctx.overrides().gpu_matmul};
}

MatmulPlan plan_matmul(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                       DType weight_dtype, MatmulOptions options, QuantFormat quant) {
    if (m == 0 || n == 0 || k == 0) {
        throw Error("matmul: empty shape m=" + fmt::to_string(m) + " n=" + fmt::to_string(n) +
                    " k=" + fmt::to_string(k));
    }
    MatmulPlan plan = quant != QuantFormat::None
                          ? matmul_detail::plan_matmul_quant(device, m, n, k, weight_dtype, options, quant)
                      : matmul_detail::coopmat_chosen(device, m, weight_dtype, options)
                          ? matmul_detail::plan_matmul_coopmat(device, m, n, k, weight_dtype, options)
                          : matmul_detail::plan_matmul_dense(device, m, n, k, weight_dtype, options);
    plan.m = m;
    plan.n = n;
    plan.k = k;
    plan.weight_dtype = weight_dtype;
    grant_fusions(plan, device.limits, options);
    return plan;
}

std::uint64_t matmul_scratch_bytes(const Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                                   DType weight_dtype, MatmulOptions options, QuantFormat quant) {
    return plan_matmul(matmul_device(ctx), m, n, k, weight_dtype, options, quant).scratch_bytes;
}

}  // namespace vkf
