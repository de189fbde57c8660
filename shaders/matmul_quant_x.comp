#version 450
// The integer dot-product path of the quantized matmul (matmul_quant.comp INTDOT): X
// quantized per block of 32 to int8 with one fp32 scale, and the block's sum of the int8
// values (q4_0 takes its offset of 8 off as 8 * sum once per block). Layout and rounding:
// interface/matmul_quant_x.h. One invocation per block; grid x = blocks of a row, y = rows.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "interface/matmul_quant_x.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(std430, binding = 0) readonly buffer X { float x_data[]; };
layout(std430, binding = 1) writeonly buffer Q { uint q_data[]; };

void main() {
    const uint blocks = params.k / 32u;
    const uint b = gl_GlobalInvocationID.x;
    const uint row = gl_WorkGroupID.y;
    if (b >= blocks || row >= params.m) {
        return;
    }
    const uint e = params.x_base + row * params.k + 32u * b;
    float v[32];
    float amax = 0.0;
    [[unroll]] for (uint i = 0u; i < 32u; ++i) {
        v[i] = x_data[e + i];
        amax = max(amax, abs(v[i]));
    }
    const float d = amax / 127.0;
    const float inv = amax > 0.0 ? 127.0 / amax : 0.0;
    const uint blk = row * blocks + b;
    int sum = 0;
    [[unroll]] for (uint c = 0u; c < 8u; ++c) {
        const ivec4 q = ivec4(clamp(roundEven(vec4(v[4u * c], v[4u * c + 1u], v[4u * c + 2u], v[4u * c + 3u]) * inv),
                                    vec4(-127.0), vec4(127.0)));
        sum += (q.x + q.y) + (q.z + q.w);
        q_data[params.q_base + blk * 8u + c] =
            uint(q.x & 0xFF) | (uint(q.y & 0xFF) << 8u) | (uint(q.z & 0xFF) << 16u) | (uint(q.w & 0xFF) << 24u);
    }
    const uint meta = params.q_base + params.m * blocks * 8u + blk * 2u;
    q_data[meta] = floatBitsToUint(d);
    q_data[meta + 1u] = uint(sum);
}
