#include "host/ops/matmul.hpp"

#include "host/ops/matmul_internal.hpp"
#include "host/ops/tensor_binding.hpp"
#include "host/util/math.hpp"
#include "runtime/error.hpp"
#include "shaders/variants.hpp"

#include <algorithm>
#include <array>
#include <bit>

namespace vkf {

namespace {

struct Tile {
    std::uint32_t m, n, k;
    std::uint32_t workgroup_size() const { return m * n / 16; }  // 4 x 4 outputs per invocation
    // matmul.comp's x_tile and w_tile: k rows of m / 4 (n / 4) vec4s each, rounded up to an
    // odd count of vec4s against shared-memory bank conflicts (see the shader).
    std::uint32_t shared_bytes() const { return 16 * k * (((m / 4) | 1) + ((n / 4) | 1)); }
};

// Largest first; the first that fits the device (and is not much taller than the input)
// is taken. The 4 x 4 ones only serve devices with almost no shared memory.
constexpr std::array<Tile, 9> kTiles{{
    {64, 64, 16},
    {32, 64, 16},
    {32, 32, 16},
    {16, 64, 16},
    {16, 32, 16},
    {16, 16, 16},
    {8, 16, 8},
    {8, 8, 8},
    {4, 4, 8},
}};

// Decoding shapes (a few rows) go to the matrix-vector kernel.
constexpr std::uint32_t kGemvMaxRows = 4;
constexpr std::uint32_t kGemvMaxWorkgroup = 128;
// Blocked kernel blocks: 1 x 8 for single rows (decoding), 4 x 8 otherwise. On lavapipe
// (fp16, n = 4096, k = 1024) 1 x 8 runs 3x faster than the matrix-vector kernel at m = 1 and
// 4 x 8 2.5x faster than 64 x 64 shared-memory tiles at m = 64. Larger blocks run faster
// still (8 x 16: 4.5x) but llvmpipe's first compile of them takes 6-17 s (4 x 8: 2 s).
constexpr std::uint32_t kBlockRows = 4;
constexpr std::uint32_t kBlockCols = 8;
constexpr std::uint32_t kBlockedWorkgroup = 64;
constexpr std::uint32_t kReduceWorkgroup = 64;
// Row-dot kernel (CPU devices with subgroup arithmetic, m <= kRowDotMaxRows): rows of X per
// workgroup, W rows per subgroup pass, and at most this many groups of them per workgroup
// (one subgroup each). On lavapipe (Mesa 22.3, fp16, k = 1024 and 4096, n = 1024..62720)
// 1 x 8 x 4 with 64-bit loads runs 1.3-2x faster than the blocked kernel's 1 x 8 at m = 1;
// at m = 4 and 8 (4 x 8 x 4) it is no faster than blocked 4 x 8, which keeps those.
constexpr std::uint32_t kRowDotMaxRows = 1;
constexpr std::uint32_t kRowDotRows = 4;
constexpr std::uint32_t kRowDotCols = 8;
constexpr std::uint32_t kRowDotGroups = 4;
// Split K for parallelism when the output alone gives fewer workgroups than this (a CPU
// device has a thread per core, a GPU many more lanes to fill).
constexpr std::uint64_t kTargetWorkgroupsGpu = 128;
constexpr std::uint64_t kTargetWorkgroupsCpu = 16;
constexpr std::uint32_t kMinSliceK = 512;
constexpr std::uint32_t kMaxParallelSplits = 16;

bool fits(const ComputeLimits& l, std::uint32_t workgroup, std::uint32_t shared) {
    return workgroup <= l.workgroup_invocations && workgroup <= l.workgroup_size[0] && shared <= l.shared_memory;
}

const Tile* choose_tile(const ComputeLimits& l, std::uint32_t m) {
    const std::uint32_t wanted_rows = std::max<std::uint32_t>(16, std::bit_ceil(m));
    for (int pass = 0; pass < 2; ++pass) {
        for (const Tile& t : kTiles) {
            if (fits(l, t.workgroup_size(), t.shared_bytes()) && (pass == 1 || t.m <= wanted_rows)) {
                return &t;
            }
        }
    }
    return nullptr;
}

// Power of two; 0 when even one invocation's 16 bytes of shared memory do not fit.
std::uint32_t gemv_workgroup(const ComputeLimits& l, std::uint32_t k) {
    std::uint32_t wg = std::bit_floor(
        std::min({kGemvMaxWorkgroup, l.workgroup_invocations, l.workgroup_size[0], l.shared_memory / 16}));
    while (wg > 32 && wg * 8 > k) {
        wg /= 2;  // short rows: fewer idle invocations and reduction steps
    }
    return wg;
}

// Loop iterations of one invocation over a K slice of `len`: an upper bound counting every
// loop, except the blocked kernel's [[unroll]] loops of constant count, which llvmpipe
// unrolls (the long-K tests on lavapipe would fail if it did not).
std::uint64_t loop_iterations(const MatmulPlan& p, std::uint64_t len) {
    switch (p.kernel) {
        case MatmulKernel::Tiled: {
            const std::uint64_t per_tile = ceil_div(p.tile_m * p.tile_k, p.workgroup_size) +
                                           ceil_div(p.tile_n * p.tile_k, p.workgroup_size) + p.tile_k + 1;
            return ceil_div(len, p.tile_k) * per_tile + 8;
        }
        case MatmulKernel::Gemv:
            return ceil_div(len, p.workgroup_size) + std::bit_width(p.workgroup_size) + 8;
        case MatmulKernel::RowDot: {
            // Passes of a subgroup over its column groups, each at most one iteration per
            // `subgroup_size` elements (8 or 16 times fewer with vector loads) plus the tail's.
            const std::uint64_t passes = ceil_div(p.column_groups, p.workgroup_size / p.subgroup_size);
            return passes * (ceil_div(len, p.subgroup_size) + 2) + 8;
        }
        default:  // blocked: one iteration per k (per pair of k when it can), the rest unrolled
            return len + 8;
    }
}

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

// The tiled kernel is matmul.comp without a kernel define.
const SpirvCode& main_code(MatmulKernel kernel, bool f16, bool wide, bool scatter, bool layernorm, bool no_epilogue) {
    return shaders::variant("matmul", {{"GEMV", kernel == MatmulKernel::Gemv},
                                       {"BLOCKED", kernel == MatmulKernel::Blocked},
                                       {"ROWDOT", kernel == MatmulKernel::RowDot},
                                       {"WIDE64", kernel == MatmulKernel::RowDot && wide},
                                       {"LN_X", layernorm},
                                       {"WEIGHTS_F16", f16},
                                       {"SCATTER", scatter},
                                       {"NO_EPILOGUE", no_epilogue}});
}

void check_scatter(const MatmulArgs& a) {
    const QkvScatter& s = *a.scatter;
    const std::string who = "matmul (QKV scatter): ";
    if (s.head_dim == 0 || s.q_heads == 0 || s.kv_heads == 0 || s.head_dim % 2 != 0) {
        throw Error(who + "head_dim (even), q_heads and kv_heads must be set; got " + std::to_string(s.head_dim) +
                    ", " + std::to_string(s.q_heads) + ", " + std::to_string(s.kv_heads));
    }
    if (s.interleaved && s.q_heads != s.kv_heads) {
        throw Error(who + "the interleaved [n_head, 3, head_dim] layout needs as many K/V heads as query heads");
    }
    const std::uint64_t q_cols = std::uint64_t{s.q_heads} * s.head_dim;
    const std::uint64_t kv_cols = std::uint64_t{s.kv_heads} * s.head_dim;
    if (a.n != q_cols + 2 * kv_cols) {
        throw Error(who + "n = " + std::to_string(a.n) + " but " + std::to_string(s.q_heads) + " query and " +
                    std::to_string(s.kv_heads) + " K/V heads of " + std::to_string(s.head_dim) + " need " +
                    std::to_string(q_cols + 2 * kv_cols));
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
            throw Error(who + "the " + name + " range must hold whole rows of " + std::to_string(kv_cols) + " " +
                        to_string(s.cache_dtype) + " values (" + std::to_string(row_bytes) + " bytes each)");
        }
    }
    if (s.k_cache.size != s.v_cache.size) {
        throw Error(who + "the K and V caches differ in size");
    }
    if (s.step.buffer == nullptr || s.step.size < 4) {
        throw Error(who + "the step range must hold the uint32 key count");
    }
}

}  // namespace

namespace matmul_detail {

std::uint64_t target_workgroups(const MatmulDevice& device) {
    return device.cpu ? kTargetWorkgroupsCpu : kTargetWorkgroupsGpu;
}

EpilogueBindings bind_epilogue(const ComputeLimits& limits, const MatmulArgs& a, std::uint32_t m0, std::uint32_t mc,
                               std::uint32_t n0, std::uint32_t nc, std::uint32_t bias_bytes,
                               const ElementBinding& unused) {
    if (a.scatter) {
        // Q and the caches are bound whole (the scatter places every element itself); the
        // residual's binding carries the step.
        EpilogueBindings b{.y = {a.y, 0}, .bias = {unused.range, 0}, .residual = {a.scatter->step, 0}};
        if (a.bias.buffer != nullptr) {
            b.bias = bind_elements(limits, a.bias, n0, nc, bias_bytes, "matmul", "bias");
        }
        return b;
    }
    const std::uint64_t y_first = std::uint64_t{m0} * a.n + n0;
    const std::uint64_t y_count = std::uint64_t{mc - 1} * a.n + nc;
    EpilogueBindings b{.y = bind_elements(limits, a.y, y_first, y_count, 4, "matmul", "Y"),
                       .bias = {unused.range, 0},
                       .residual = {unused.range, 0}};
    if (a.bias.buffer != nullptr) {
        b.bias = bind_elements(limits, a.bias, n0, nc, bias_bytes, "matmul", "bias");
    }
    if (a.residual.buffer != nullptr) {
        b.residual = bind_elements(limits, a.residual, y_first, y_count, 4, "matmul", "residual");
    }
    return b;
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
                    std::to_string(limits.subgroup_size) + " invocations)");
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
        throw Error("matmul: one row of " + std::to_string(k) + " elements (k) exceeds maxStorageBufferRange (" +
                    std::to_string(limits.storage_buffer_range) + " bytes)");
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

void check_tensors(const ComputeLimits& limits, const MatmulArgs& a, const MatmulPlan& plan) {
    if (a.activation != Activation::None && a.activation != Activation::GeluTanh &&
        a.activation != Activation::GeluErf) {
        throw Error(std::string("matmul: the epilogue applies no ") + to_string(a.activation) +
                    " (gated units run as record_gated_activation)");
    }
    const auto bsize = static_cast<std::uint32_t>(element_size(a.weight_dtype));
    if (a.scatter) {
        check_scatter(a);
        // The SCATTER kernels bind the caches and the step besides X, W (and the scales),
        // bias and Q; a Session takes the separate passes on devices that allow fewer.
        check_storage_buffers(limits,
                              plan.quant == QuantFormat::None ? kScatterMatmulBindings : kScatterMatmulQuantBindings,
                              "matmul with a QKV scatter (MatmulArgs::scatter)");
    } else {
        check_tensor(a.y, std::uint64_t{a.m} * a.n, 4, "matmul", "Y", shape_text({a.m, a.n}, "f32"));
    }
    if (a.bias.buffer != nullptr) {
        check_tensor(a.bias, a.n, bsize, "matmul", "bias", shape_text({a.n}, to_string(a.weight_dtype)));
    }
    if (a.residual.buffer != nullptr) {
        check_tensor(a.residual, std::uint64_t{a.m} * a.n, 4, "matmul", "residual", shape_text({a.m, a.n}, "f32"));
    }
    if (plan.scratch_bytes > 0 && (a.scratch.buffer == nullptr || a.scratch.size < plan.scratch_bytes)) {
        throw Error("matmul [" + std::to_string(a.m) + ", " + std::to_string(a.n) + ", " + std::to_string(a.k) + "] " +
                    (plan.int_dot        ? "quantizes X"
                     : plan.n_splits > 1 ? "splits K"
                                         : "writes partial sums for its separate epilogue") +
                    " (" + plan.describe() + ") and needs a scratch range of " + std::to_string(plan.scratch_bytes) +
                    " bytes (matmul_scratch_bytes); got " +
                    std::to_string(a.scratch.buffer == nullptr ? 0 : a.scratch.size));
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

std::vector<Binding> scatter_bindings(const MatmulArgs& a) {
    if (!a.scatter) {
        return {};
    }
    // fp16 caches are written with atomics, which read the word.
    const Access access = a.scatter->cache_dtype == DType::F16 ? Access::ReadWrite : Access::Write;
    return {{a.scatter->k_cache, access}, {a.scatter->v_cache, access}};
}

std::vector<SpecConstant> scatter_constants(const MatmulArgs& a) {
    if (!a.scatter) {
        return {};
    }
    return {{VKF_MATMUL_SPEC_SCATTER_HEAD_DIM, a.scatter->head_dim}};
}

ReducePass reduce_pass(Context& ctx, bool bias_f16, const MatmulArgs& a) {
    const bool scatter = a.scatter.has_value();
    const ComputeLimits& limits = ctx.limits();
    ReducePass pass;
    pass.workgroup_size = std::min({kReduceWorkgroup, limits.workgroup_invocations, limits.workgroup_size[0]});
    pass.pipeline = &ctx.pipeline(
        PipelineDesc{.code = &shaders::variant("matmul", {"REDUCE", {"WEIGHTS_F16", bias_f16}, {"SCATTER", scatter}}),
                     .workgroup_size = {pass.workgroup_size, 1, 1},
                     .constants = scatter_constants(a),
                     .push_constant_layout = MatmulPush::layout,
                     .binding_count = scatter ? 6u : 4u});
    return pass;
}

void dispatch_reduce(CommandList& list, const ReducePass& pass, MatmulPush push, const ElementBinding& partials,
                     const BufferRange* bias, const BufferRange* residual, const BufferRange& y, const MatmulArgs& a) {
    push.x_base = partials.base;  // the reduce pass has no X
    std::vector<Binding> bindings = {{partials.range, Access::Read},
                                     {bias != nullptr ? *bias : partials.range, Access::Read},
                                     {residual != nullptr ? *residual : partials.range, Access::Read},
                                     {y, Access::Write}};
    const std::vector<Binding> scatter = scatter_bindings(a);
    bindings.insert(bindings.end(), scatter.begin(), scatter.end());
    list.dispatch(Dispatch{.pipeline = pass.pipeline,
                           .bindings = bindings,
                           .push_constants = push_bytes(push),
                           .groups = {static_cast<std::uint32_t>(ceil_div(push.n, pass.workgroup_size)), push.m, 1},
                           .label = "matmul reduce"});
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
        default:
            return "auto";
    }
}

std::string MatmulPlan::describe() const {
    std::string s = std::string(to_string(kernel));
    if (quant != QuantFormat::None) {
        s += std::string(" ") + to_string(quant) + " (" + std::to_string(blocks_per_step) + " blocks a step)";
        if (int_dot) {
            s += " int8 dot";
        }
    }
    if (kernel == MatmulKernel::Tiled) {
        s += " " + std::to_string(tile_m) + "x" + std::to_string(tile_n) + "x" + std::to_string(tile_k);
    } else if (kernel == MatmulKernel::Blocked) {
        s += " " + std::to_string(block_m) + "x" + std::to_string(block_n);
    } else if (kernel == MatmulKernel::RowDot) {
        s += " " + std::to_string(block_m) + "x" + std::to_string(block_n) + "x" + std::to_string(column_groups) +
             " (subgroups of " + std::to_string(subgroup_size) + (wide_loads ? ", 64-bit loads)" : ")");
    }
    s += ", " + std::to_string(workgroup_size) + " invocations, " + std::to_string(shared_bytes) + " B shared";
    if (n_splits > 1) {
        s += ", split-K " + std::to_string(n_splits) + " x " + std::to_string(k_split);
    }
    if (separate_epilogue) {
        s += ", epilogue in the reduce pass";
    }
    s += ", pieces of " + std::to_string(rows_per_piece) + " rows x " + std::to_string(cols_per_piece) + " cols, ~" +
         std::to_string(loop_iterations) + " loop iterations per invocation";
    return s;
}

bool matmul_fuses_layernorm(const MatmulPlan& plan) {
    return plan.kernel == MatmulKernel::RowDot && plan.quant == QuantFormat::None && !plan.separate_epilogue;
}

MatmulDevice matmul_device(const Context& ctx) {
    return MatmulDevice{.limits = ctx.limits(), .cpu = ctx.device_info().type == DeviceType::Cpu};
}

MatmulPlan plan_matmul(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                       DType weight_dtype, MatmulOptions options, QuantFormat quant) {
    if (quant != QuantFormat::None) {
        return matmul_detail::plan_matmul_quant(device, m, n, k, weight_dtype, options, quant);
    }
    const ComputeLimits& limits = device.limits;
    if (m == 0 || n == 0 || k == 0) {
        throw Error("matmul: empty shape m=" + std::to_string(m) + " n=" + std::to_string(n) +
                    " k=" + std::to_string(k));
    }
    // Every kernel binds X, W, bias, residual and Y; with fewer storage buffers it writes
    // partial sums (X, W, P) and the reduce pass (P, bias, residual, Y) applies the epilogue.
    check_storage_buffers(limits, kSeparateEpilogueBindings, "matmul");
    MatmulPlan plan;
    plan.separate_epilogue = limits.storage_buffers < kMatmulBindings;
    const Tile* tile = choose_tile(limits, m);
    const std::uint32_t gemv_wg = gemv_workgroup(limits, k);
    MatmulKernel kernel = options.kernel;
    if (kernel == MatmulKernel::Auto) {
        if (device.cpu && matmul_detail::rowdot_fits(limits) && m <= kRowDotMaxRows) {
            kernel = MatmulKernel::RowDot;
        } else if (device.cpu) {
            kernel = MatmulKernel::Blocked;
        } else if (m <= kGemvMaxRows && gemv_wg > 0) {
            kernel = MatmulKernel::Gemv;
        } else if (tile != nullptr) {
            kernel = MatmulKernel::Tiled;
        } else if (gemv_wg > 0) {
            kernel = MatmulKernel::Gemv;
        } else {
            kernel = MatmulKernel::Blocked;  // no shared memory at all
        }
    }
    plan.kernel = kernel;
    std::uint32_t granule = 1;
    std::uint64_t groups = 0;  // workgroups of the whole output, before splitting K
    switch (kernel) {
        case MatmulKernel::Tiled:
            if (tile == nullptr) {
                throw Error("matmul: no tile fits the device (" + std::to_string(limits.shared_memory) +
                            " bytes of shared memory, " + std::to_string(limits.workgroup_invocations) +
                            " invocations per workgroup)");
            }
            plan.tile_m = tile->m;
            plan.tile_n = tile->n;
            plan.tile_k = tile->k;
            plan.workgroup_size = tile->workgroup_size();
            plan.shared_bytes = tile->shared_bytes();
            granule = tile->k;
            groups = ceil_div(m, tile->m) * ceil_div(n, tile->n);
            break;
        case MatmulKernel::Gemv:
            if (gemv_wg == 0) {
                throw Error(
                    "matmul: the matrix-vector kernel needs 16 bytes of shared memory per invocation; the "
                    "device allows " +
                    std::to_string(limits.shared_memory) + " bytes");
            }
            plan.workgroup_size = gemv_wg;
            plan.shared_bytes = 16 * gemv_wg;
            granule = 2;  // slices start on pairs
            groups = std::uint64_t{m} * ceil_div(n, 4);
            break;
        case MatmulKernel::RowDot: {
            groups = matmul_detail::plan_rowdot(plan, device, m, n, kRowDotRows, kRowDotCols, kRowDotGroups, "");
            plan.wide_loads = limits.int64;
            granule = 16;  // slices start on whole chunks
            break;
        }
        default: {
            groups = matmul_detail::plan_blocked(plan, device, m, n, kBlockRows, kBlockCols, kBlockedWorkgroup);
            granule = 2;  // slices start on pairs
            break;
        }
    }

    // K slices: at least what was forced, enough for parallelism on small outputs, and
    // enough that no invocation nears the driver's loop limit (llvmpipe: runtime/quirks.cpp).
    matmul_detail::split_k(plan, device, k, groups, granule, options, loop_iterations);
    // Pieces: W rows, X rows, Y spans and partial sums each fit one binding.
    const std::uint64_t w_max = max_bound_elements(limits, static_cast<std::uint32_t>(element_size(weight_dtype)));
    matmul_detail::plan_pieces(plan, limits, m, n, k, w_max / k);
    return plan;
}

std::uint64_t matmul_scratch_bytes(const Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                                   DType weight_dtype, MatmulOptions options, QuantFormat quant) {
    return plan_matmul(matmul_device(ctx), m, n, k, weight_dtype, options, quant).scratch_bytes;
}

void record_matmul(Context& ctx, CommandList& list, const MatmulArgs& a) {
    if (a.quant != QuantFormat::None) {
        matmul_detail::record_matmul_quant(ctx, list, a);
        return;
    }
    const ComputeLimits& limits = ctx.limits();
    const MatmulPlan plan = plan_matmul(matmul_device(ctx), a.m, a.n, a.k, a.weight_dtype, a.options);
    const bool f16 = a.weight_dtype == DType::F16;
    const auto wsize = static_cast<std::uint32_t>(element_size(a.weight_dtype));
    const char* wtype = to_string(a.weight_dtype);
    const bool has_bias = a.bias.buffer != nullptr;
    const bool has_residual = a.residual.buffer != nullptr;
    check_tensor(a.x, std::uint64_t{a.m} * a.k, 4, "matmul", "X", shape_text({a.m, a.k}, "f32"));
    check_tensor(a.w, std::uint64_t{a.n} * a.k, wsize, "matmul", "W", shape_text({a.n, a.k}, wtype));
    const bool layernorm = a.x_norm.has_value();
    if (layernorm && !matmul_fuses_layernorm(plan)) {
        throw Error("matmul: a fused LayerNorm of X needs the row-dot kernel (and the fused epilogue); the plan is " +
                    plan.describe() + " (run record_layernorm first)");
    }
    matmul_detail::check_tensors(limits, a, plan);
    // The separate epilogue's kernels write partial sums, as split K does.
    const bool split = plan.n_splits > 1 || plan.separate_epilogue;
    std::vector<Binding> ln_bindings;
    if (layernorm) {
        check_tensor(a.x_norm->weight, a.k, wsize, "matmul", "LayerNorm weight", shape_text({a.k}, wtype));
        if (a.x_norm->bias.buffer != nullptr) {
            check_tensor(a.x_norm->bias, a.k, wsize, "matmul", "LayerNorm bias", shape_text({a.k}, wtype));
        }
        // Bound in whole words (an odd k of fp16 values), from the tensors' first element: the
        // kernel indexes them from 0 and reads 8 at a time where k allows.
        const auto bind_norm = [&](const BufferRange& r, const char* what) {
            const ElementBinding b = bind_elements(limits, r, 0, a.k, wsize, "matmul", what);
            if (b.base != 0 || r.offset % 16 != 0) {
                throw Error(std::string("matmul: a fused LayerNorm's ") + what +
                            " must start on a 16-byte boundary that the device can bind (offset " +
                            std::to_string(r.offset) + ")");
            }
            return b.range;
        };
        const BufferRange weight = bind_norm(a.x_norm->weight, "LayerNorm weight");
        ln_bindings = {
            {weight, Access::Read},
            {a.x_norm->bias.buffer != nullptr ? bind_norm(a.x_norm->bias, "LayerNorm bias") : weight, Access::Read}};
    }

    std::vector<SpecConstant> constants;
    if (plan.kernel == MatmulKernel::Tiled) {
        constants = {{VKF_MATMUL_SPEC_TM4, plan.tile_m / 4},
                     {VKF_MATMUL_SPEC_TN4, plan.tile_n / 4},
                     {VKF_MATMUL_SPEC_TK, plan.tile_k}};
    } else if (plan.kernel == MatmulKernel::Gemv) {
        constants = {{VKF_MATMUL_SPEC_WG, plan.workgroup_size}};
    } else if (plan.kernel == MatmulKernel::RowDot) {
        constants = {{VKF_MATMUL_SPEC_RM, plan.block_m},
                     {VKF_MATMUL_SPEC_RN, plan.block_n},
                     {VKF_MATMUL_SPEC_RG, plan.column_groups}};
    } else {
        constants = {{VKF_MATMUL_SPEC_RM, plan.block_m}, {VKF_MATMUL_SPEC_RN, plan.block_n}};
    }
    // Split K: the slices write plain partial sums and the reduce pass scatters.
    const bool scatter_main = a.scatter.has_value() && !split;
    if (scatter_main) {
        const std::vector<SpecConstant> more = matmul_detail::scatter_constants(a);
        constants.insert(constants.end(), more.begin(), more.end());
    }
    const Pipeline& main = ctx.pipeline(PipelineDesc{
        .code = &main_code(plan.kernel, f16, plan.wide_loads, scatter_main, layernorm, plan.separate_epilogue),
        .workgroup_size = {plan.workgroup_size, 1, 1},
        .constants = constants,
        .push_constant_layout = MatmulPush::layout,
        .binding_count = plan.separate_epilogue ? 3u
                                                : (scatter_main ? kScatterMatmulBindings : kMatmulBindings) +
                                                      static_cast<std::uint32_t>(ln_bindings.size()),
        .shared_memory_bytes = plan.shared_bytes,
        .required_subgroup_size = plan.kernel == MatmulKernel::RowDot ? plan.subgroup_size : 0});
    const matmul_detail::ReducePass reduce =
        split ? matmul_detail::reduce_pass(ctx, f16, a) : matmul_detail::ReducePass{};
    const std::vector<Binding> scatter = matmul_detail::scatter_bindings(a);
    // Fused work shows in GPU profiles under its own name.
    const char* label = a.scatter ? (layernorm ? "matmul (LayerNorm, QKV scatter)" : "matmul (QKV scatter)")
                                  : (layernorm ? "matmul (LayerNorm)" : "matmul");
    const std::uint32_t epilogue_flags = matmul_detail::epilogue_flags(a);

    for (std::uint32_t m0 = 0; m0 < a.m; m0 += plan.rows_per_piece) {
        const std::uint32_t mc = std::min(plan.rows_per_piece, a.m - m0);
        const ElementBinding x =
            bind_elements(limits, a.x, std::uint64_t{m0} * a.k, std::uint64_t{mc} * a.k, 4, "matmul", "X");
        for (std::uint32_t n0 = 0; n0 < a.n; n0 += plan.cols_per_piece) {
            const std::uint32_t nc = std::min(plan.cols_per_piece, a.n - n0);
            const ElementBinding w =
                bind_elements(limits, a.w, std::uint64_t{n0} * a.k, std::uint64_t{nc} * a.k, wsize, "matmul", "W");
            const matmul_detail::EpilogueBindings e = matmul_detail::bind_epilogue(limits, a, m0, mc, n0, nc, wsize, x);
            const ElementBinding &y = e.y, &bias = e.bias, &res = e.residual;
            MatmulPush push{.m = mc,
                            .n = nc,
                            .k = a.k,
                            .ldy = a.n,
                            .x_base = x.base,
                            .w_base = w.base,
                            .bias_base = has_bias ? bias.base : 0,
                            .res_base = has_residual ? res.base : 0,
                            .y_base = y.base,
                            .k_split = plan.k_split,
                            .n_splits = plan.n_splits,
                            .flags = epilogue_flags};
            matmul_detail::set_epilogue_push(push, a, m0, n0);
            if (plan.kernel != MatmulKernel::Tiled && a.k % 2 == 0 && w.base % 2 == 0) {
                push.flags |= VKF_MATMUL_FLAG_PAIRS;
            }
            if (plan.kernel == MatmulKernel::RowDot && a.k % 8 == 0 && x.base % 4 == 0 && w.base % (f16 ? 8 : 4) == 0) {
                push.flags |= VKF_MATMUL_FLAG_VEC8;
                if (plan.wide_loads && a.k % 16 == 0 && x.base % 8 == 0 && w.base % (f16 ? 16 : 8) == 0) {
                    push.flags |= VKF_MATMUL_FLAG_VEC16;
                }
            }
            GroupCount groups;
            switch (plan.kernel) {
                case MatmulKernel::Tiled:
                    groups = {static_cast<std::uint32_t>(ceil_div(nc, plan.tile_n)),
                              static_cast<std::uint32_t>(ceil_div(mc, plan.tile_m)), plan.n_splits};
                    break;
                case MatmulKernel::Gemv:
                    groups = {static_cast<std::uint32_t>(ceil_div(nc, 4)), mc, plan.n_splits};
                    break;
                case MatmulKernel::RowDot:
                    groups = {static_cast<std::uint32_t>(ceil_div(nc, plan.block_n * plan.column_groups)),
                              static_cast<std::uint32_t>(ceil_div(mc, plan.block_m)), plan.n_splits};
                    break;
                default:
                    groups = {static_cast<std::uint32_t>(ceil_div(ceil_div(nc, plan.block_n), plan.workgroup_size)),
                              static_cast<std::uint32_t>(ceil_div(mc, plan.block_m)), plan.n_splits};
                    break;
            }
            if (!split) {
                std::vector<Binding> bindings = {{x.range, Access::Read},
                                                 {w.range, Access::Read},
                                                 {bias.range, Access::Read},
                                                 {res.range, Access::Read},
                                                 {y.range, Access::Write}};
                bindings.insert(bindings.end(), scatter.begin(), scatter.end());
                bindings.insert(bindings.end(), ln_bindings.begin(), ln_bindings.end());
                list.dispatch(Dispatch{.pipeline = &main,
                                       .bindings = bindings,
                                       .push_constants = push_bytes(push),
                                       .groups = groups,
                                       .label = label});
                continue;
            }
            const ElementBinding partials =
                bind_elements(limits, a.scratch, 0, std::uint64_t{plan.n_splits} * mc * nc, 4, "matmul", "scratch");
            MatmulPush partial_push = push;
            partial_push.flags = (push.flags & (VKF_MATMUL_FLAG_PAIRS | VKF_MATMUL_FLAG_VEC8 | VKF_MATMUL_FLAG_VEC16 |
                                                VKF_MATMUL_FLAG_LN_BIAS)) |
                                 VKF_MATMUL_FLAG_PARTIALS;
            partial_push.y_base = partials.base;
            std::vector<Binding> bindings = {{x.range, Access::Read}, {w.range, Access::Read}};
            if (!plan.separate_epilogue) {  // bias and residual: bound, not read
                bindings.insert(bindings.end(), {{x.range, Access::Read}, {x.range, Access::Read}});
            }
            bindings.push_back({partials.range, Access::Write});
            bindings.insert(bindings.end(), ln_bindings.begin(), ln_bindings.end());
            list.dispatch(Dispatch{.pipeline = &main,
                                   .bindings = bindings,
                                   .push_constants = push_bytes(partial_push),
                                   .groups = groups,
                                   .label = label});
            matmul_detail::dispatch_reduce(list, reduce, push, partials, has_bias ? &bias.range : nullptr,
                                           (a.scatter || has_residual) ? &res.range : nullptr, y.range, a);
        }
    }
}

}  // namespace vkf
