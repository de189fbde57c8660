#pragma once
// LayerNorm (shaders/layernorm.comp): the push-constant mirror and the workgroup choice.
// record_layernorm and its arguments are declared in host/ops.hpp.

#include "host/ops.hpp"

namespace vkf {

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
