// The matmul with dense weights (fp32 or fp16; shaders/matmul.comp): its kernels' plan and
// its WeightSource, recorded by matmul_record.cpp, which also binds the cooperative-matrix
// kernel's fp16 weights (matmul_coopmat.cpp: its plan, code and constants).

#include "base/error.hpp"
#include "host/ops/matmul_internal.hpp"
#include "host/util/math.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>

namespace vkf::matmul_detail {

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
// From 8 rows (a batch of decoding sequences), 8 x 8 blocks: on lavapipe (BLOOM-560m, 16
// sequences, f16) a decode step took 1138 ms against 4 x 8's ~1.5 s (16 x 8: 1503 ms, 8 x 16:
// 1257 ms, both with slower first compiles).
constexpr std::uint32_t kBatchBlockRows = 8;
constexpr std::uint32_t kBatchBlockMinRows = 8;
// Row-dot kernel (CPU devices with subgroup arithmetic, m <= kRowDotMaxRows): rows of X per
// workgroup, W rows per subgroup pass, and at most this many groups of them per workgroup
// (one subgroup each). On lavapipe (Mesa 22.3, fp16, k = 1024 and 4096, n = 1024..62720)
// 1 x 8 x 4 with 64-bit loads runs 1.3-2x faster than the blocked kernel's 1 x 8 at m = 1;
// at m = 4 and 8 (4 x 8 x 4) it is no faster than blocked 4 x 8, which keeps those.
constexpr std::uint32_t kRowDotMaxRows = 1;
constexpr std::uint32_t kRowDotRows = 4;
constexpr std::uint32_t kRowDotCols = 8;
constexpr std::uint32_t kRowDotGroups = 4;
// X, W, bias, residual and Y.
constexpr std::uint32_t kDenseBindings = 5;

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
            // fp16 arithmetic: the products of a tile in folds of kF16FoldProducts, a loop more.
            const std::uint64_t folds = p.f16_arithmetic ? p.tile_k / kF16FoldProducts : 0;
            const std::uint64_t per_tile = ceil_div(p.tile_m * p.tile_k, p.workgroup_size) +
                                           ceil_div(p.tile_n * p.tile_k, p.workgroup_size) + p.tile_k + folds + 1;
            return ceil_div(len, p.tile_k) * per_tile + 8;
        }
        case MatmulKernel::Gemv: {
            // fp16 arithmetic: chunks of kF16FoldProducts elements a step (the chunk's own
            // loop has a constant count and is unrolled); fp32: one element a step (pairs
            // where rows start on them, counted as single elements).
            const std::uint64_t step =
                p.f16_arithmetic ? std::uint64_t{kF16FoldProducts} * p.workgroup_size : p.workgroup_size;
            return ceil_div(len, step) + std::bit_width(p.workgroup_size) + 8;
        }
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

// The tiled kernel is matmul.comp without a kernel define; TILED_F16 and GEMV_F16 are the
// tiled and matrix-vector kernels' fp16 arithmetic on fp16 weights (WEIGHTS_F16 implied).
const SpirvCode& main_code(const MatmulPlan& plan, bool f16, bool scatter, bool no_epilogue) {
    const MatmulKernel kernel = plan.kernel;
    const bool wide = plan.wide_loads;
    const bool tiled_f16 = kernel == MatmulKernel::Tiled && plan.f16_arithmetic;
    const bool gemv = kernel == MatmulKernel::Gemv;
    const bool gemv_f16 = gemv && plan.f16_arithmetic;
    return shaders::variant("matmul",
                            {{"TILED_F16", tiled_f16},
                             {"GEMV", gemv && !gemv_f16},
                             {"GEMV_F16", gemv_f16},
                             {"BLOCKED", kernel == MatmulKernel::Blocked},
                             {"ROWDOT", kernel == MatmulKernel::RowDot},
                             {"WIDE64", (kernel == MatmulKernel::RowDot || kernel == MatmulKernel::Blocked) && wide},
                             {"LN_X", plan.x_norm},
                             {"WEIGHTS_F16", f16 && !tiled_f16 && !gemv_f16},
                             {"SCATTER", scatter},
                             {"NO_EPILOGUE", no_epilogue}});
}

class DenseWeights final : public WeightSource {
public:
    DenseWeights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& a, bool scatter_main)
        : limits_(ctx.limits()), plan_(plan), a_(a), wsize_(static_cast<std::uint32_t>(element_size(a.weight_dtype))) {
        check_tensor(a.w, std::uint64_t{a.n} * a.k, wsize_, "matmul", "W",
                     shape_text({a.n, a.k}, to_string(a.weight_dtype)));
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
        } else if (plan.kernel == MatmulKernel::CoopMat) {
            constants = coopmat_constants(plan);
        } else {
            constants = {{VKF_MATMUL_SPEC_RM, plan.block_m}, {VKF_MATMUL_SPEC_RN, plan.block_n}};
        }
        const SpirvCode& code = plan.kernel == MatmulKernel::CoopMat ? coopmat_code(plan, scatter_main)
                                                                     : main_code(plan, a.weight_dtype == DType::F16,
                                                                                 scatter_main, plan.separate_epilogue);
        pipeline_ = &kernel_pipeline(ctx, plan, a, code, std::move(constants), MatmulPush::layout, scatter_main);
    }

    WeightPiece piece(const ElementBinding& x, std::uint32_t n0, std::uint32_t nc) override {
        const ElementBinding w =
            bind_elements(limits_, a_.w, std::uint64_t{n0} * a_.k, std::uint64_t{nc} * a_.k, wsize_, "matmul", "W");
        WeightPiece p{.bindings = {{w.range, Access::Read}}, .w_base = w.base, .pipeline = pipeline_};
        const bool f16 = a_.weight_dtype == DType::F16;
        if (plan_.kernel != MatmulKernel::Tiled && a_.k % 2 == 0 && w.base % 2 == 0) {
            p.load_flags |= VKF_MATMUL_FLAG_PAIRS;
        }
        if (plan_.kernel == MatmulKernel::Blocked && plan_.wide_loads && a_.k % 8 == 0 && x.base % 4 == 0 &&
            w.base % 4 == 0) {
            p.load_flags |= VKF_MATMUL_FLAG_VEC8;  // rows start on 4 elements: 64-bit loads
        }
        if (plan_.kernel == MatmulKernel::Gemv && plan_.f16_arithmetic && a_.k % 8 == 0 && x.base % 4 == 0 &&
            w.base % 8 == 0) {
            p.load_flags |= VKF_MATMUL_FLAG_VEC8;  // 16-byte loads: 8 halves of W, 4 floats of X
        }
        if (plan_.kernel == MatmulKernel::RowDot && a_.k % 8 == 0 && x.base % 4 == 0 && w.base % (f16 ? 8 : 4) == 0) {
            p.load_flags |= VKF_MATMUL_FLAG_VEC8;
            if (plan_.wide_loads && a_.k % 16 == 0 && x.base % 8 == 0 && w.base % (f16 ? 16 : 8) == 0) {
                p.load_flags |= VKF_MATMUL_FLAG_VEC16;
            }
        }
        return p;
    }

    std::span<const std::byte> push(const MatmulPush& push, const WeightPiece& /*piece*/) override {
        push_ = push;
        return push_bytes(push_);
    }

private:
    const ComputeLimits& limits_;
    const MatmulPlan& plan_;
    const MatmulArgs& a_;
    std::uint32_t wsize_;
    const Pipeline* pipeline_ = nullptr;
    MatmulPush push_{};
};

}  // namespace

MatmulPlan plan_matmul_dense(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                             DType weight_dtype, const MatmulOptions& options) {
    const ComputeLimits& limits = device.limits;
    // Every kernel binds X, W, bias, residual and Y; with fewer storage buffers it writes
    // partial sums (X, W, P) and the reduce pass (P, bias, residual, Y) applies the epilogue.
    check_storage_buffers(limits, kSeparateEpilogueBindings, "matmul");
    MatmulPlan plan;
    plan.separate_epilogue = limits.storage_buffers < kDenseBindings;
    const Tile* tile = choose_tile(limits, m);
    const std::uint32_t gemv_wg = gemv_workgroup(limits, k);
    MatmulKernel kernel = options.kernel;
    if (kernel == MatmulKernel::Auto) {
        if (device.cpu && rowdot_fits(limits) && m <= kRowDotMaxRows) {
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
                throw Error("matmul: no tile fits the device (" + fmt::to_string(limits.shared_memory) +
                            " bytes of shared memory, " + fmt::to_string(limits.workgroup_invocations) +
                            " invocations per workgroup)");
            }
            plan.tile_m = tile->m;
            plan.tile_n = tile->n;
            plan.tile_k = tile->k;
            plan.workgroup_size = tile->workgroup_size();
            plan.shared_bytes = tile->shared_bytes();
            // fp16 arithmetic on fp16 weights: fp16 tiles, half the shared memory.
            plan.f16_arithmetic = weight_dtype == DType::F16 && f16_arithmetic(device, options);
            if (plan.f16_arithmetic) {
                plan.shared_bytes /= 2;
            }
            granule = tile->k;
            groups = ceil_div(m, tile->m) * ceil_div(n, tile->n);
            break;
        case MatmulKernel::Gemv:
            if (gemv_wg == 0) {
                throw Error(
                    "matmul: the matrix-vector kernel needs 16 bytes of shared memory per invocation; the "
                    "device allows " +
                    fmt::to_string(limits.shared_memory) + " bytes");
            }
            plan.workgroup_size = gemv_wg;
            plan.shared_bytes = 16 * gemv_wg;
            // fp16 arithmetic on fp16 weights (GEMV_F16): decoding on a GPU.
            plan.f16_arithmetic = weight_dtype == DType::F16 && f16_arithmetic(device, options);
            // Slices start on pairs; in fp16 on whole chunks of 8 (the 16-byte loads' rows).
            granule = plan.f16_arithmetic ? kF16FoldProducts : 2;
            groups = std::uint64_t{m} * ceil_div(n, 4);
            break;
        case MatmulKernel::RowDot: {
            groups = plan_rowdot(plan, device, m, n, kRowDotRows, kRowDotCols, kRowDotGroups, "");
            plan.wide_loads = limits.int64;
            granule = 16;  // slices start on whole chunks
            break;
        }
        default: {
            // Batched decoding (many sequences' rows) on CPU devices: 8-row blocks read the
            // weights half as often.
            const std::uint32_t rows = device.cpu && options.kernel == MatmulKernel::Auto && m >= kBatchBlockMinRows
                                           ? kBatchBlockRows
                                           : kBlockRows;
            groups = plan_blocked(plan, device, m, n, rows, kBlockCols, kBlockedWorkgroup);
            plan.wide_loads = limits.int64;
            granule = plan.wide_loads ? 4 : 2;  // slices start on pairs (with 64-bit loads: quads)
            break;
        }
    }

    // K slices: at least what was forced, enough for parallelism on small outputs, and
    // enough that no invocation nears the driver's loop limit (llvmpipe: runtime/quirks.cpp).
    split_k(plan, device, k, groups, granule, options, loop_iterations);
    // Pieces: W rows, X rows, Y spans and partial sums each fit one binding.
    const std::uint64_t w_max = max_bound_elements(limits, static_cast<std::uint32_t>(element_size(weight_dtype)));
    plan_pieces(plan, limits, m, n, k, w_max / k);
    return plan;
}

std::unique_ptr<WeightSource> dense_weights(Context& ctx, const MatmulPlan& plan, const MatmulArgs& args,
                                            bool scatter_main) {
    return std::make_unique<DenseWeights>(ctx, plan, args, scatter_main);
}

}  // namespace vkf::matmul_detail
