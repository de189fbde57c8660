#pragma once
// Elementwise activations over fp32 (shaders/activation.comp); dst may be the same range
// as src.

#include "host/spec/activation.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"
#include "shaders/interface/activation.h"

namespace vkf {

void record_activation(Context& ctx, CommandList& list, Activation activation, BufferRange src, BufferRange dst);
// dst = clamp(src, -bound, bound): MPT's clip_qkv. bound > 0.
void record_clamp(Context& ctx, CommandList& list, BufferRange src, BufferRange dst, float bound);
// erf itself, the one the GELU erf form uses (GLSL has none): for tests and tools.
void record_erf(Context& ctx, CommandList& list, BufferRange src, BufferRange dst);

// ActivationPush (push constants): shaders/interface/activation.h.
static_assert(sizeof(ActivationPush) == 16);

}  // namespace vkf
