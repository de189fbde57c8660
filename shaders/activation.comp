#version 450
// Elementwise activations over fp32: GELU_TANH (BLOOM), GELU_ERF (MPT), CLAMP to
// [-bound, bound] (MPT's clip_qkv), and ERF itself (the erf the GELU_ERF form and the
// matmul epilogue use, exposed for its accuracy tests).
// One invocation per element; dst may be the same range as src. The host binds ranges of
// at most maxStorageBufferRange; the bases say where the first element sits in each.

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "gelu.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "interface/activation.h"

layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };

void main() {
    const uint i = global_index_x();
    if (i >= params.count) {
        return;
    }
    const float x = src[params.src_base + i];
#if defined(GELU_TANH)
    dst[params.dst_base + i] = gelu_tanh(x);
#elif defined(GELU_ERF)
    dst[params.dst_base + i] = gelu_erf(x);
#elif defined(CLAMP)
    dst[params.dst_base + i] = clamp(x, -params.bound, params.bound);
#elif defined(ERF)
    dst[params.dst_base + i] = vkf_erf(x);
#else
#error "define GELU_TANH, GELU_ERF, CLAMP or ERF"
#endif
}
