#pragma once
// Elementwise activations over fp32 (shaders/activation.comp); dst may be the same range
// as src.

#include "host/spec/activation.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"

namespace vkf {

void record_activation(Context& ctx, CommandList& list, Activation activation, BufferRange src, BufferRange dst);
// dst = clamp(src, -bound, bound): MPT's clip_qkv. bound > 0.
void record_clamp(Context& ctx, CommandList& list, BufferRange src, BufferRange dst, float bound);
// erf itself, the one the GELU erf form uses (GLSL has none): for tests and tools.
void record_erf(Context& ctx, CommandList& list, BufferRange src, BufferRange dst);

// Mirrors ActivationParams in shaders/activation.comp.
struct ActivationPush {
    std::uint32_t count;
    std::uint32_t src_base;
    std::uint32_t dst_base;
    float bound; // clamp only
};
static_assert(sizeof(ActivationPush) == 16);

} // namespace vkf
