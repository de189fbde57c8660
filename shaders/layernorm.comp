#version 450
// LayerNorm over the last dimension: y = (x - mean) / sqrt(var + eps) * weight (+ bias),
// or with VKF_LAYERNORM_FLAG_RMS the RMSNorm y = x / sqrt(mean(x^2) + eps) * weight. Rows
// are strided (x_stride, y_stride), so a norm can read and write a slice of wider rows
// (MPT's qk_ln over the Q and K columns of the fused QKV output).
// One workgroup per row. Two passes over the row in fp32 (the mean, then the variance of
// x - mean), each finished by a tree reduction in shared memory: no E[x^2] - E[x]^2
// cancellation when |mean| >> std. Both passes work on x shifted by the row's first element. Weight and bias are fp32 or fp16 (WEIGHTS_F16).
// Every invocation reads and writes only the elements i = tid (mod WG) of its row, so
// y may be the same range as x.

#extension GL_GOOGLE_include_directive : require
#include "interface/layernorm.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = VKF_LAYERNORM_SPEC_WG) const uint WG = 256; // == local_size_x, a power of two

#include "weights_io.glsl"

layout(std430, binding = 0) readonly buffer X { float x_data[]; };
layout(std430, binding = 1) readonly buffer Weight { VKF_WEIGHT weight_data[]; };
layout(std430, binding = 2) readonly buffer Bias { VKF_WEIGHT bias_data[]; };
layout(std430, binding = 3) writeonly buffer Y { float y_data[]; };

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
    const float total = sums[0];
    barrier(); // sums is reused by the next reduction
    return total;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row = gl_WorkGroupID.x;
    if (row >= params.rows) {
        return; // uniform across the workgroup: no barrier is skipped by part of it
    }
    const uint x_row = params.x_base + row * params.x_stride;
    const uint y_row = params.y_base + row * params.y_stride;
    const bool rms = (params.flags & VKF_LAYERNORM_FLAG_RMS) != 0u;

    // Shifting by the row's first element makes x - shift exact for values near the mean
    // (Sterbenz), so a mean far larger than the spread costs no precision in x - mean.
    // RMSNorm takes no mean: shift and mean stay 0 (uniform branch, the barriers are kept).
    const float shift = rms ? 0.0 : x_data[x_row];
    float s = 0.0;
    if (!rms) {
        for (uint i = tid; i < params.dim; i += WG) {
            s += x_data[x_row + i] - shift;
        }
    }
    const float mean = workgroup_sum(s) / float(params.dim); // of x - shift

    float sq = 0.0;
    for (uint i = tid; i < params.dim; i += WG) {
        const float d = (x_data[x_row + i] - shift) - mean;
        sq += d * d;
    }
    const float var = workgroup_sum(sq) / float(params.dim);
    const float inv_std = 1.0 / sqrt(var + params.eps);

    const bool has_bias = (params.flags & VKF_LAYERNORM_FLAG_BIAS) != 0u;
    for (uint i = tid; i < params.dim; i += WG) {
        float v = ((x_data[x_row + i] - shift) - mean) * inv_std * VKF_LOAD_WEIGHT(weight_data, params.weight_base + i);
        if (has_bias) {
            v += VKF_LOAD_WEIGHT(bias_data, params.bias_base + i);
        }
        y_data[y_row + i] = v;
    }
}
