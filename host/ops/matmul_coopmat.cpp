// The matmul on cooperative matrices (VK_NV_cooperative_matrix, NVIDIA's tensor cores;
// shaders/matmul_coopmat.comp): its plan, code and constants; matmul_dense.cpp's
// WeightSource records it like the other dense kernels (pieces, split-K and the reduce pass, the fused epilogue).
// It has never run: no device here has the extension, so the first GPU run of
// scripts/gpu_proof.sh (test_matmul_coopmat, vkf-bench's matmul suite) is its first run.
// Until that passes it is opt-in (MatmulKernel::CoopMat, VKF_LIMITS coopmat; docs/DESIGN.md).

#include "shaders/interface/matmul_coopmat.h"
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

// Subgroups of a workgroup and accumulators of a subgroup, largest tile first. The first
// that fits the device and is not much taller than the input is taken. With 16 x 16 x 16
// matrices: 64 x 128, 64 x 64, 16 x 64 and 16 x 16 tiles (K steps of 32).
struct CoopTile {
    std::uint32_t subgroups_m, subgroups_n, frags_m, frags_n;
};
constexpr std::array<CoopTile, 4> kCoopTiles{{
    {2, 2, 2, 4},
    {2, 2, 2, 2},
    {1, 2, 1, 2},
    {1, 1, 1, 1},
}};
// The K step through shared memory, in elements (a multiple of the matrix's K).
constexpr std::uint32_t kCoopStepK = 32;

// Shapes whose rows and columns keep the shader's shared-memory offsets 16-byte aligned.
bool aligned(const CoopMatShape& s) {
    return s.m % 8 == 0 && s.n % 8 == 0 && s.k % 8 == 0 && kCoopStepK % s.k == 0;
}

// 16 x 16 x 16 where the device has it (the common tensor-core shape), else its first
// aligned one; nullptr when none is.
const CoopMatShape* choose_shape(const ComputeLimits& limits) {
    const CoopMatShape* first = nullptr;
    for (const CoopMatShape& s : limits.coopmat_shapes) {
        if (!aligned(s)) {
            continue;
        }
        if (s.m == 16 && s.n == 16 && s.k == 16) {
            return &s;
        }
        first = first != nullptr ? first : &s;
    }
    return first;
}

std::uint32_t shared_bytes(const CoopMatShape& c, const CoopTile& t) {
    const std::uint32_t tm = t.subgroups_m * t.frags_m * c.m;
    const std::uint32_t tn = t.subgroups_n * t.frags_n * c.n;
    const std::uint32_t tiles = (tm + tn) * (kCoopStepK + VKF_COOPMAT_PAD_F16) * 2;
    const std::uint32_t stage = t.subgroups_m * t.subgroups_n * c.m * (c.n + VKF_COOPMAT_PAD_F32) * 4;
    return tiles + stage;
}

// Loop iterations of one invocation over a K slice of `len`: the tile loads per K step
// (the matrix loops are unrolled), and the epilogue's.
std::uint64_t loop_iterations(const MatmulPlan& p, std::uint64_t len) {
    const std::uint64_t per_step = ceil_div(std::uint64_t{p.tile_m} * p.tile_k, p.workgroup_size) +
                                   ceil_div(std::uint64_t{p.tile_n} * p.tile_k, p.workgroup_size) + 1;
    const CoopMatShape& c = p.coopmat.shape;
    const std::uint64_t epilogue = std::uint64_t{p.coopmat.frags_m} * p.coopmat.frags_n *
                                   ceil_div(std::uint64_t{c.m} * c.n, std::max(p.subgroup_size, 1u));
    return ceil_div(len, p.tile_k) * per_step + epilogue + 8;
}

}  // namespace

std::optional<std::string> coopmat_refusal(const MatmulDevice& device, DType weight_dtype) {
    const ComputeLimits& l = device.limits;
    const std::string who = "matmul: the cooperative-matrix kernel (MatmulKernel::CoopMat) ";
    if (weight_dtype != DType::F16) {
        return who + "reads fp16 weights only, not " + to_string(weight_dtype);
    }
    if (l.coopmat_shapes.empty()) {
        return who +
               "needs a device with cooperative matrices of fp16 inputs and fp32 accumulators: "
               "VK_NV_cooperative_matrix "
               "with its cooperativeMatrix feature in compute shaders, vulkanMemoryModel and shaderFloat16 (not "
               "VKF_LIMITS no_fp16_arithmetic); this device has none (vkf-info --json: cooperative_matrix_shapes)";
    }
    if (choose_shape(l) == nullptr) {
        return who + "needs a cooperative-matrix shape whose M, N and K are multiples of 8 dividing a K step of " +
               fmt::to_string(kCoopStepK) + "; the device's fp16 shapes fit none";
    }
    if (!l.subgroup_size_control || l.subgroup_size == 0) {
        return who +
               "needs full subgroups of a required size (subgroupSizeControl and computeFullSubgroups; not VKF_LIMITS "
               "no_subgroup_size_control)";
    }
    const CoopMatShape& shape = *choose_shape(l);
    if (l.coopmat_emulated && (shape.m * shape.n) % l.subgroup_size != 0) {
        return who + "emulated (VKF_LIMITS coopmat_emulated) spreads a " + fmt::to_string(shape.m) + "x" +
               fmt::to_string(shape.n) + " accumulator over subgroups of " + fmt::to_string(l.subgroup_size) +
               ", which do not divide it";
    }
    if (l.storage_buffers < kernel_bindings(MatmulPlan{}, false, false)) {
        return who +
               "binds 5 storage buffers (its fused epilogue) and has no separate-epilogue form; the device "
               "allows " +
               fmt::to_string(l.storage_buffers);
    }
    return std::nullopt;
}

bool coopmat_chosen(const MatmulDevice& device, std::uint32_t m, DType weight_dtype, const MatmulOptions& options) {
    if (options.kernel == MatmulKernel::CoopMat) {
        return true;  // forced: planned, or refused with the reason
    }
    return options.kernel == MatmulKernel::Auto && options.arithmetic != MatmulArithmetic::F32 &&
           device.limits.prefer_coopmat && m >= kCoopMatMinRows && !coopmat_refusal(device, weight_dtype);
}

MatmulPlan plan_matmul_coopmat(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                               DType weight_dtype, const MatmulOptions& options) {
    if (const auto refusal = coopmat_refusal(device, weight_dtype)) {
        throw Error(*refusal);
    }
    if (options.arithmetic == MatmulArithmetic::F32) {
        throw Error(
            "matmul: the cooperative-matrix kernel multiplies fp16 X and W (summing in fp32); "
            "MatmulArithmetic::F32 asks for fp32 products");
    }
    const ComputeLimits& l = device.limits;
    const CoopMatShape& shape = *choose_shape(l);
    const std::uint32_t wanted_rows = std::max(shape.m, std::bit_ceil(m));
    const CoopTile* tile = nullptr;
    for (int pass = 0; pass < 2 && tile == nullptr; ++pass) {
        for (const CoopTile& t : kCoopTiles) {
            const std::uint64_t invocations = std::uint64_t{t.subgroups_m} * t.subgroups_n * l.subgroup_size;
            const bool fits = invocations <= std::min(l.workgroup_invocations, l.workgroup_size[0]) &&
                              shared_bytes(shape, t) <= l.shared_memory;
            if (fits && (pass == 1 || t.subgroups_m * t.frags_m * shape.m <= wanted_rows)) {
                tile = &t;
                break;
            }
        }
    }
    if (tile == nullptr) {
        throw Error("matmul: the cooperative-matrix kernel fits no tile on this device (" +
                    fmt::to_string(l.shared_memory) + " bytes of shared memory, " +
                    fmt::to_string(l.workgroup_invocations) + " invocations per workgroup, subgroups of " +
                    fmt::to_string(l.subgroup_size) + ")");
    }
    MatmulPlan plan;
    plan.kernel = MatmulKernel::CoopMat;
    plan.coopmat = {.shape = shape,
                    .subgroups_m = tile->subgroups_m,
                    .subgroups_n = tile->subgroups_n,
                    .frags_m = tile->frags_m,
                    .frags_n = tile->frags_n,
                    .emulated = l.coopmat_emulated};
    plan.subgroup_size = l.subgroup_size;
    plan.tile_m = tile->subgroups_m * tile->frags_m * shape.m;
    plan.tile_n = tile->subgroups_n * tile->frags_n * shape.n;
    plan.tile_k = kCoopStepK;
    plan.workgroup_size = tile->subgroups_m * tile->subgroups_n * l.subgroup_size;
    plan.shared_bytes = shared_bytes(shape, *tile);
    plan.f16_arithmetic = true;  // fp16 products (exact in fp32), summed in fp32
    const std::uint64_t groups = ceil_div(m, plan.tile_m) * ceil_div(n, plan.tile_n);
    // K slices start on whole K steps; split for parallelism and loop limits as the others.
    split_k(plan, device, k, groups, plan.tile_k, options, loop_iterations);
    const std::uint64_t w_max = max_bound_elements(l, 2);
    plan_pieces(plan, l, m, n, k, w_max / k);
    return plan;
}

std::vector<SpecConstant> coopmat_constants(const MatmulPlan& plan) {
    const MatmulPlan::CoopMatLayout& c = plan.coopmat;
    std::vector<SpecConstant> constants = {
        {VKF_COOPMAT_SPEC_CM, c.shape.m},       {VKF_COOPMAT_SPEC_CN, c.shape.n},
        {VKF_COOPMAT_SPEC_CK, c.shape.k},       {VKF_COOPMAT_SPEC_SG_M, c.subgroups_m},
        {VKF_COOPMAT_SPEC_SG_N, c.subgroups_n}, {VKF_COOPMAT_SPEC_FRAG_M, c.frags_m},
        {VKF_COOPMAT_SPEC_FRAG_N, c.frags_n},   {VKF_COOPMAT_SPEC_K_STEPS, plan.tile_k / c.shape.k}};
    if (c.emulated) {
        constants.push_back({VKF_COOPMAT_SPEC_EMU_LANES, plan.subgroup_size});
    }
    return constants;
}

const SpirvCode& coopmat_code(const MatmulPlan& plan, bool scatter_main) {
    return shaders::variant("matmul_coopmat", {{"SCATTER", scatter_main}, {"EMULATE", plan.coopmat.emulated}});
}

}  // namespace vkf::matmul_detail
