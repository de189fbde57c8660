#version 450
// Elementwise kernels over 32-bit words: fill (dst = value), copy (dst = a) and add
// (dst = a + b as float32). One invocation handles one element; the host splits tensors
// over maxStorageBufferRange into bound ranges and the runtime splits group counts over
// the device limit, so `base` is this range's first element in the push constants.

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "interface/elementwise.h"

#if defined(OP_FILL)
layout(std430, binding = 0) writeonly buffer Dst { uint dst[]; };
#elif defined(OP_COPY)
layout(std430, binding = 0) readonly buffer SrcA { uint a[]; };
layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
#elif defined(OP_ADD)
layout(std430, binding = 0) readonly buffer SrcA { float a[]; };
layout(std430, binding = 1) readonly buffer SrcB { float b[]; };
layout(std430, binding = 2) writeonly buffer Dst { float dst[]; };
#else
#error "define OP_FILL, OP_COPY or OP_ADD"
#endif

void main() {
    const uint i = global_index_x();
    if (i >= params.count) {
        return;
    }
#if defined(OP_FILL)
    dst[i] = params.value;
#elif defined(OP_COPY)
    dst[i] = a[i];
#elif defined(OP_ADD)
    dst[i] = a[i] + b[i];
#endif
}
