#version 450
// Pooling of an encoder's token states x [rows, dim] into one embedding y [dim]: the mean
// over the rows (sentence-transformers' mean pooling) or the first row (CLS), then optionally
// y / max(|y|_2, 1e-12) (torch.nn.functional.normalize). One workgroup: invocation t owns the
// columns t, t + WG, ...; each column is summed over the rows in order, in fp32. The norm is
// a tree reduction in shared memory.

#extension GL_GOOGLE_include_directive : require
#include "interface/pooling.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = VKF_POOLING_SPEC_WG) const uint WG = 256; // == local_size_x, a power of two

layout(std430, binding = 0) readonly buffer X { float x_data[]; };
// Not writeonly: the normalizing pass reads back the values its own invocation wrote.
layout(std430, binding = 1) buffer Y { float y_data[]; };

shared float sums[WG];

float workgroup_sum(float v) {
    const uint tid = gl_LocalInvocationID.x;
    sums[tid] = v;
    barrier();
    for (uint stride = WG / 2u; stride > 0u; stride /= 2u) {
        if (tid < stride) {
            sums[tid] += sums[tid + stride];
        }
        barrier();
    }
    return sums[0];
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const bool mean = (params.flags & VKF_POOLING_FLAG_MEAN) != 0u;
    const uint rows = mean ? params.rows : 1u;
    float sq = 0.0;
    for (uint c = tid; c < params.dim; c += WG) {
        float s = 0.0;
        for (uint r = 0u; r < rows; ++r) {
            s += x_data[params.x_base + r * params.dim + c];
        }
        const float v = mean ? s / float(params.rows) : s;
        y_data[params.y_base + c] = v;
        sq += v * v;
    }
    if ((params.flags & VKF_POOLING_FLAG_NORMALIZE) != 0u) { // uniform: every invocation reaches the barriers
        const float inv_norm = 1.0 / max(sqrt(workgroup_sum(sq)), 1e-12);
        for (uint c = tid; c < params.dim; c += WG) {
            y_data[params.y_base + c] *= inv_norm;
        }
    }
}
