#version 450
// Gated linear units, the MLPs of Baichuan and Jais (SwiGLU: SILU) and of JinaBERT (GEGLU:
// GELU_ERF): y = act(gate) * up, elementwise over [rows, cols] in fp32. One invocation per
// element, x along the columns, y along the rows (workgroup rows of one column tile).

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "gelu.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "interface/gated_activation.h"

layout(std430, binding = 0) readonly buffer Gate { float gate[]; };
layout(std430, binding = 1) readonly buffer Up { float up[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };

// x sigmoid(x) as x / (1 + exp(-x)): exp overflowing to +inf for very negative x gives the
// correct -0 rather than a NaN.
float silu(float x) {
    return x / (1.0 + exp(-x));
}

void main() {
    const uint c = gl_GlobalInvocationID.x;
    const uint r = gl_GlobalInvocationID.y;
    if (c >= params.cols || r >= params.rows) {
        return;
    }
    const float g = gate[params.gate_base + r * params.gate_stride + c];
#if defined(SILU)
    const float a = silu(g);
#elif defined(GELU_ERF)
    const float a = gelu_erf(g);
#elif defined(GELU_TANH)
    const float a = gelu_tanh(g);
#else
#error "define SILU, GELU_ERF or GELU_TANH"
#endif
    y[params.y_base + r * params.cols + c] = a * up[params.up_base + r * params.up_stride + c];
}
