#pragma once
// Elementwise activations (shaders/activation.comp): the push-constant mirror.
// record_activation, record_clamp and record_erf are declared in host/ops.hpp.

#include "host/ops.hpp"

namespace vkf {

// Mirrors ActivationParams in shaders/activation.comp.
struct ActivationPush {
    std::uint32_t count;
    std::uint32_t src_base;
    std::uint32_t dst_base;
    float bound; // clamp only
};
static_assert(sizeof(ActivationPush) == 16);

} // namespace vkf
