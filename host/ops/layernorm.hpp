#pragma once
// LayerNorm over the last dimension (shaders/layernorm.comp), and its workgroup choice.

#include "host/util/dtype.hpp"
#include "runtime/context.hpp"

namespace vkf {

struct LayerNormArgs {
    BufferRange x;      // [rows, dim] fp32
    BufferRange weight; // [dim] weight_dtype
    BufferRange bias;   // [dim] weight_dtype, or no buffer (MPT's no_bias)
    BufferRange y;      // [rows, dim] fp32; may be the same range as x
    std::uint32_t rows = 0, dim = 0;
    float eps = 1e-5f;
    DType weight_dtype = DType::F32;
};

void record_layernorm(Context& ctx, CommandList& list, const LayerNormArgs& args);

// Mirrors LayerNormParams in shaders/layernorm.comp.
struct LayerNormPush {
    std::uint32_t rows;
    std::uint32_t dim;
    std::uint32_t x_base;
    std::uint32_t y_base;
    std::uint32_t weight_base;
    std::uint32_t bias_base;
    std::uint32_t flags; // kLayerNormBias
    float eps;
};
static_assert(sizeof(LayerNormPush) == 32);
inline constexpr std::uint32_t kLayerNormBias = 1u << 0;

// Invocations per row: a power of two within the limits, no wider than the row needs, and
// wide enough that the loops stay within the driver's loop limit. Throws vkf::Error when
// that is impossible.
std::uint32_t layernorm_workgroup_size(const ComputeLimits& limits, std::uint32_t dim);

} // namespace vkf
