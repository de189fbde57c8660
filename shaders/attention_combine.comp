#version 450
// Combine pass of split-KV attention: merges the n_splits partial rows written by
// attention.comp (SPLIT_KV) into the output. Grid: x = query rows, y = heads, z = batch;
// each invocation owns pairs of output dimensions. A paged batch's rows go where its
// sequence table puts them; rows past a sequence's count are neither read nor written.

#extension GL_GOOGLE_include_directive : require
#include "interface/attention.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = VKF_ATTN_SPEC_D) const uint D = 64;
const uint DP = D / 2u;
const float MASKED = -3.0e38;

#include "attention_io.glsl"

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };
layout(std430, binding = 1) writeonly buffer OBuf { VKF_PAIR o_data[]; };
// The sequence table of a paged batch (VKF_ATTN_FLAG_PAGED); any buffer otherwise, unread.
layout(std430, binding = 2) readonly buffer Sequences { uint sequences[]; };
uint seq_word(uint i) { return sequences[i]; }

void main() {
    const uint row = gl_WorkGroupID.x;
    const uint head = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint first_row = seq_first_row(b);
    if (row >= seq_row_count(b, first_row)) {
        return;
    }
    const uint first = ((b * params.n_head + head) * params.q_len + row) * params.n_splits;

    float global_max = MASKED;
    for (uint s = 0u; s < params.n_splits; ++s) {
        const uint record = (first + s) * (D + 2u);
        if (partials[record + D + 1u] > 0.0) {
            global_max = max(global_max, partials[record + D]);
        }
    }
    for (uint p = gl_LocalInvocationID.x; p < DP; p += gl_WorkGroupSize.x) {
        vec2 sum = vec2(0.0);
        float denominator = 0.0;
        for (uint s = 0u; s < params.n_splits; ++s) {
            const uint record = (first + s) * (D + 2u);
            const float split_sum = partials[record + D + 1u];
            if (split_sum > 0.0) {
                const float weight = exp(partials[record + D] - global_max);
                denominator += weight * split_sum;
                sum += weight * vec2(partials[record + 2u * p], partials[record + 2u * p + 1u]);
            }
        }
        const vec2 out_pair = denominator > 0.0 ? sum / denominator : vec2(0.0);
        o_data[((first_row + row) * params.n_head + head) * DP + p] = vec2_to_pair(out_pair);
    }
}
