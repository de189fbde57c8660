#pragma once
// Gated linear units (shaders/gated_activation.comp): y = act(gate) * up over [rows, cols],
// the MLP of SwiGLU (Baichuan, Jais: Activation::Silu) and GEGLU (JinaBERT:
// Activation::GeluErf) models. gate and up are row-strided views, so they may be the two
// halves of one fused projection's output [rows, 2 * cols].

#include "host/spec/activation.hpp"
#include "runtime/context.hpp"
#include "shaders/interface/gated_activation.h"

namespace vkf {

struct GatedActivationArgs {
    BufferRange gate;  // fp32, row r at element r * gate_stride, cols elements used
    BufferRange up;    // fp32, row r at element r * up_stride
    // [rows, cols] fp32, dense; may be the same range as a dense gate (each element is read
    // before it is written by the same invocation), must not overlap up otherwise.
    BufferRange y;
    std::uint32_t rows = 0, cols = 0;
    std::uint32_t gate_stride = 0, up_stride = 0;  // elements; >= cols
    Activation activation = Activation::Silu;
};

// Throws vkf::Error for Activation::None, strides below cols, ranges too small for the
// views, or a view over maxStorageBufferRange.
void record_gated_activation(Context& ctx, CommandList& list, const GatedActivationArgs& args);

static_assert(sizeof(GatedActivationPush) == 32);

}  // namespace vkf
