#version 450
// Embedding lookup: out[t, :] = table[ids[t], :], the table fp32, fp16 (WEIGHTS_F16) or
// block-quantized (Q8_0, Q4_0: quant_io.glsl; the values plane in words and the fp16
// scales, each element decoded exactly), out fp32. A table larger than
// maxStorageBufferRange is bound in ranges of rows and dispatched once per range: a
// dispatch writes only the tokens whose id falls in its rows, so every output row is
// written exactly once. The last range also writes zeros for ids past the vocabulary,
// which the host cannot see (the ids live on the device).
// Grid: x = hidden / WG, y = tokens.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "interface/embedding.h"

layout(std430, binding = 0) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 2) writeonly buffer Out { float out_data[]; };

#if defined(Q8_0) || defined(Q4_0)
#include "quant_io.glsl"
layout(std430, binding = 1) readonly buffer Table { uint table[]; };
layout(std430, binding = 3) readonly buffer Scales { uint scales[]; };

// Element h of row `row` of the bound rows (hidden % 32 == 0).
float load_element(uint row, uint h) {
    const uint blocks = params.hidden / 32u;
    const uint blk = h / 32u;
    const uint e = h % 32u;
    const uint word = table[params.table_base + (row * blocks + blk) * QUANT_BLOCK_WORDS + quant_word_of(e)];
    return quant_value(word, e) * VKF_LOAD_SCALE(scales, params.scales_base + row * blocks + blk);
}
#else
#include "weights_io.glsl"
layout(std430, binding = 1) readonly buffer Table { VKF_WEIGHT table[]; };

float load_element(uint row, uint h) {
    return VKF_LOAD_WEIGHT(table, params.table_base + row * params.hidden + h);
}
#endif

void main() {
    const uint h = gl_GlobalInvocationID.x;
    const uint t = gl_WorkGroupID.y;
    if (h >= params.hidden || t >= params.tokens) {
        return;
    }
    const uint id = ids[params.ids_base + t];
    const uint out_index = params.out_base + t * params.hidden + h;
    if (id >= params.row_begin && id - params.row_begin < params.row_count) {
        out_data[out_index] = load_element(id - params.row_begin, h);
    } else if (id >= params.vocab && params.zero_invalid != 0u) {
        out_data[out_index] = 0.0;
    }
}
