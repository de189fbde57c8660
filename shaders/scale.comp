#version 450
// y = x * scale, or with COLUMNS y[r, c] = x[r, c] * scale * columns[c]: the logit scales of
// MPT and Jais and Baichuan2's normalized LM head (1 / |row| of the head per vocabulary
// entry), and Jais' embedding multiplier. fp32; y may be the same range as x.

#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "interface/scale.h"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#if defined(COLUMNS)
layout(std430, binding = 2) readonly buffer Columns { float columns[]; };
#endif

void main() {
    const uint i = global_index_x();
    if (i >= params.count) {
        return;
    }
#if defined(COLUMNS)
    const float factor = params.scale * columns[(params.first + i) % params.cols];
#else
    const float factor = params.scale;
#endif
    y[params.y_base + i] = x[params.x_base + i] * factor;
}
