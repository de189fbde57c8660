#version 450
// Device ceilings for vkf-bench: what the hardware itself can do, against which the
// kernels' numbers are placed.
//   COPY      dst = src in vec4 words: memory bandwidth (bytes read plus written)
//   FMA_F32   chains of fp32 fma per invocation: the fp32 FMA rate
//   FMA_F16   the same in float16 arithmetic (needs shaderFloat16)
//   EMPTY     does nothing: dispatch overhead
// The FMA loops run `iterations` times per invocation; the host keeps that below the
// driver's loop limit (llvmpipe skips iterations after 65535). Each iteration does 8
// independent vec4 fmas (32 fmas, 64 flops), enough chains to hide the latency of one.

#extension GL_GOOGLE_include_directive : require
#if defined(FMA_F16)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "interface/bench_ceilings.h"

#if defined(COPY)
layout(std430, binding = 0) readonly buffer Src { vec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { vec4 dst[]; };
#elif defined(FMA_F32) || defined(FMA_F16)
layout(std430, binding = 0) writeonly buffer Dst { float dst[]; };
#elif defined(EMPTY)
layout(std430, binding = 0) writeonly buffer Dst { uint dst[]; };
#else
#error "define COPY, FMA_F32, FMA_F16 or EMPTY"
#endif

#if defined(FMA_F16)
#define VEC f16vec4
#define SCALAR float16_t
#else
#define VEC vec4
#define SCALAR float
#endif

void main() {
    const uint i = global_index_x();
#if defined(COPY)
    if (i < params.count) {
        dst[i] = src[i];
    }
#elif defined(FMA_F32) || defined(FMA_F16)
    const SCALAR a = SCALAR(params.a);
    const SCALAR b = SCALAR(params.b);
    const SCALAR seed = SCALAR(float(gl_LocalInvocationID.x & 63u) * 0.015625);
    VEC x0 = VEC(seed), x1 = x0 + VEC(SCALAR(0.125)), x2 = x0 + VEC(SCALAR(0.25)), x3 = x0 + VEC(SCALAR(0.375));
    VEC x4 = x0 - VEC(SCALAR(0.125)), x5 = x0 - VEC(SCALAR(0.25)), x6 = x0 - VEC(SCALAR(0.375)), x7 = -x0;
    for (uint it = 0u; it < params.iterations; ++it) {
        x0 = fma(x0, VEC(a), VEC(b));
        x1 = fma(x1, VEC(a), VEC(b));
        x2 = fma(x2, VEC(a), VEC(b));
        x3 = fma(x3, VEC(a), VEC(b));
        x4 = fma(x4, VEC(a), VEC(b));
        x5 = fma(x5, VEC(a), VEC(b));
        x6 = fma(x6, VEC(a), VEC(b));
        x7 = fma(x7, VEC(a), VEC(b));
    }
    const VEC sum = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    if (i < params.count) {
        dst[i] = float(sum.x + sum.y + sum.z + sum.w);
    }
#elif defined(EMPTY)
    // Never true (the host passes count 0): keeps the binding without doing any work.
    if (i < params.count) {
        dst[i] = 0u;
    }
#endif
}
