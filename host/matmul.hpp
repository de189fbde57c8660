#pragma once
// Matrix multiply of activations by weights^T (shaders/matmul.comp): the push-constant
// mirror and the plan (kernel, tiles, K slices, pieces) chosen from the device limits.
// record_matmul and its arguments are declared in host/ops.hpp.

#include "host/ops.hpp"

#include <string>

namespace vkf {

// Mirrors MatmulParams in shaders/matmul.comp.
struct MatmulPush {
    std::uint32_t m;
    std::uint32_t n;
    std::uint32_t k;
    std::uint32_t ldy;
    std::uint32_t x_base;
    std::uint32_t w_base;
    std::uint32_t bias_base;
    std::uint32_t res_base;
    std::uint32_t y_base;
    std::uint32_t k_split;
    std::uint32_t n_splits;
    std::uint32_t flags; // kMatmul* bits below
};
static_assert(sizeof(MatmulPush) == 48);
inline constexpr std::uint32_t kMatmulBias = 1u << 0;
inline constexpr std::uint32_t kMatmulResidual = 1u << 1;
inline constexpr std::uint32_t kMatmulGeluTanh = 1u << 2;
inline constexpr std::uint32_t kMatmulGeluErf = 1u << 3;
inline constexpr std::uint32_t kMatmulPartials = 1u << 4;
inline constexpr std::uint32_t kMatmulPairs = 1u << 5;
inline constexpr std::uint32_t kMatmulVec8 = 1u << 6;
inline constexpr std::uint32_t kMatmulVec16 = 1u << 7;

// What the plan needs to know of the device.
struct MatmulDevice {
    ComputeLimits limits;
    // A CPU implementation (lavapipe): every memory load, shared memory included, costs per
    // invocation and barriers switch coroutines, so the register-blocked kernel (prefill) and
    // the row-dot kernel (decode, with subgroup arithmetic) win there.
    bool cpu = false;
};
MatmulDevice matmul_device(const Context& ctx);

struct MatmulPlan {
    MatmulKernel kernel = MatmulKernel::Tiled;
    std::uint32_t tile_m = 0, tile_n = 0, tile_k = 0; // tiled: Y tile and K step
    std::uint32_t block_m = 0, block_n = 0;           // blocked: Y block of one invocation;
                                                      // rowdot: rows of a workgroup, columns of a subgroup pass
    std::uint32_t column_groups = 0;                  // rowdot: groups of block_n columns per workgroup
    std::uint32_t subgroup_size = 0;                  // rowdot: the device's, as planned
    bool wide_loads = false;                          // rowdot: 64-bit components (shaderInt64)
    std::uint32_t workgroup_size = 0;
    std::uint32_t shared_bytes = 0;
    std::uint32_t n_splits = 1;   // K slices; > 1 adds the reduce pass
    std::uint32_t k_split = 0;    // K elements per slice
    std::uint32_t rows_per_piece = 0; // rows of X and Y bound per dispatch
    std::uint32_t cols_per_piece = 0; // rows of W (columns of Y) bound per dispatch
    std::uint64_t scratch_bytes = 0;
    std::uint64_t loop_iterations = 0; // per invocation, counted without unrolling (an upper bound)
    std::string describe() const;
};

// Throws vkf::Error when a forced kernel does not fit the device, or when one row of W or
// X is longer than maxStorageBufferRange.
MatmulPlan plan_matmul(const MatmulDevice& device, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                       DType weight_dtype, MatmulOptions options = {});

} // namespace vkf
