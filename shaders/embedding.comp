#version 450
// Embedding lookup: out[t, :] = table[ids[t], :], the table fp32, fp16 (WEIGHTS_F16) or
// block-quantized (Q8_0, Q4_0: quant_io.glsl; the values plane in words and the fp16
// scales, each element decoded exactly) or ggml's K-quant super-blocks as GGUF stores them
// (Q2_K .. Q6_K, and the 32-weight Q4_1, Q5_0, Q5_1: kquant_io.glsl; table_base in bytes; each element decoded with ggml's
// operations, `precise` so that none is fused, equal to dequantize_kquant_row), out fp32. A table larger than
// maxStorageBufferRange is bound in ranges of rows and dispatched once per range: a
// dispatch writes only the tokens whose id falls in its rows, so every output row is
// written exactly once. The last range also writes zeros for ids past the vocabulary,
// which the host cannot see (the ids live on the device).
// Grid: x = hidden / WG, y = tokens.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

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
#elif defined(Q2_K) || defined(Q3_K) || defined(Q4_K) || defined(Q5_K) || defined(Q6_K) || defined(Q4_1) || \
    defined(Q5_0) || defined(Q5_1)
layout(std430, binding = 1) readonly buffer Table { uint table[]; };
// The same super-blocks again (the host binds the table at both): their scales are read here.
layout(std430, binding = 3) readonly buffer Heads { uint heads[]; };
#define KQ_DATA table
#define KQ_HEAD_DATA heads
#include "kquant_io.glsl"

uint kq_byte(uint b) {
    return kq_word(b) & 0xFFu;
}
uint kq_head_byte(uint b) {
    return kq_head_word(b) & 0xFFu;
}

// Element h of row `row` of the bound rows (hidden % KQ_BLOCK_WEIGHTS == 0), as ggml's
// to_float gives it.
float load_element(uint row, uint h) {
    const uint b = params.table_base + row * (params.hidden / KQ_BLOCK_WEIGHTS) * KQ_BLOCK_BYTES +
                   (h / KQ_BLOCK_WEIGHTS) * KQ_BLOCK_BYTES;
    const uint e = h % KQ_BLOCK_WEIGHTS;
#if defined(KQ_LEGACY)
    const vec2 dm = unpackHalf2x16(kq_head_word(b));
    uint q = (kq_byte(b + KQ_QS_AT + e % 16u) >> (4u * (e / 16u))) & 0xFu;
#if !defined(Q4_1)
    q |= ((kq_word(b + KQ_QH_AT) >> e) & 1u) << 4u;
#endif
#if defined(Q5_0)
    precise float w = float(int(q) - 16) * dm.x;
#else
    precise float w = float(q) * dm.x + dm.y;
#endif
    return w;
#elif defined(Q2_K) || defined(Q3_K)
    const uint half_ = e / 128u, g = (e % 128u) / 32u, l = e % 32u;
    const uint is = 8u * half_ + 2u * g + l / 16u;
#if defined(Q2_K)
    const uint q = (kq_byte(b + 16u + 32u * half_ + l) >> (2u * g)) & 3u;
    const uint sc = kq_head_byte(b + is);
    const vec2 dm = unpackHalf2x16(kq_head_word(b + 80u));
    precise float dl = dm.x * float(sc & 0xFu);
    precise float ml = dm.y * float(sc >> 4u);
    precise float w = dl * float(q) - ml;
    return w;
#else
    const int q2 = int((kq_byte(b + 32u + 32u * half_ + l) >> (2u * g)) & 3u);
    const bool hbit = ((kq_byte(b + l) >> (4u * half_ + g)) & 1u) != 0u;
    const uint low = is < 8u ? kq_head_byte(b + 96u + is) & 0xFu : kq_head_byte(b + 96u + is - 8u) >> 4u;
    const uint high = (kq_head_byte(b + 104u + is % 4u) >> (2u * (is / 4u))) & 3u;
    const float d = unpackHalf2x16(kq_head_word(b + 108u)).x;
    precise float dl = d * float(int(low | (high << 4u)) - 32);
    precise float w = dl * float(q2 - (hbit ? 0 : 4));
    return w;
#endif
#elif defined(Q6_K)
    const uint half_ = e / 128u, g = (e % 128u) / 32u, l = e % 32u;
    const uint low = (kq_byte(b + 64u * half_ + 32u * (g % 2u) + l) >> (4u * (g / 2u))) & 0xFu;
    const uint high = (kq_byte(b + 128u + 32u * half_ + l) >> (2u * g)) & 3u;
    const int sc = int(kq_head_byte(b + 192u + 8u * half_ + 2u * g + l / 16u) << 24) >> 24;
    const float d = unpackHalf2x16(kq_head_word(b + 208u)).x;
    precise float w = d * float(sc);
    w = w * float(int(low | (high << 4u)) - 32);
    return w;
#else
    const uint j = e / 32u, l = e % 32u;
    const vec2 dm = unpackHalf2x16(kq_head_word(b));
    // The 6-bit scale and min of sub-block j (kquant_io.glsl's kq_multipliers, one of them).
    uint sc, m;
    if (j < 4u) {
        sc = kq_head_byte(b + 4u + j) & 63u;
        m = kq_head_byte(b + 8u + j) & 63u;
    } else {
        sc = (kq_head_byte(b + 8u + j) & 0xFu) | ((kq_head_byte(b + j) >> 6u) << 4u);
        m = (kq_head_byte(b + 8u + j) >> 4u) | ((kq_head_byte(b + 4u + j) >> 6u) << 4u);
    }
#if defined(Q4_K)
    uint q = (kq_byte(b + 16u + 32u * (j / 2u) + l) >> (4u * (j % 2u))) & 0xFu;
#else
    uint q = (kq_byte(b + 48u + 32u * (j / 2u) + l) >> (4u * (j % 2u))) & 0xFu;
    q |= ((kq_byte(b + 16u + l) >> j) & 1u) << 4u;
#endif
    precise float dl = dm.x * float(sc);
    precise float ml = dm.y * float(m);
    precise float w = dl * float(q) - ml;
    return w;
#endif
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
