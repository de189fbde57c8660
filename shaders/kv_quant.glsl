// K and V of the KV_QUANT variants: each stored as fp16 or in q8_0/q4_0 blocks
// (interface/kv_quant.h), chosen by a specialization constant apiece, read and dequantized
// to fp32 as element pairs or quads. The includer declares k_data and v_data as uint arrays
// (or one of them, below) and defines KV_HEAD_DIM (the head size, a multiple of 32); `head_row` counts head rows
// ((key row) * n_kv_head + kv head). Branches on the formats fold at pipeline creation.
#ifndef VKF_KV_QUANT_GLSL
#define VKF_KV_QUANT_GLSL

#include "interface/kv_quant.h"

layout(constant_id = VKF_ATTN_SPEC_K_FORMAT) const uint K_FORMAT = VKF_KV_FORMAT_F16;
layout(constant_id = VKF_ATTN_SPEC_V_FORMAT) const uint V_FORMAT = VKF_KV_FORMAT_F16;

const uint KVQ_SCALE_WORDS = VKF_KV_SCALE_WORDS(KV_HEAD_DIM);

uint kv_format(bool value_side) { return value_side ? V_FORMAT : K_FORMAT; }
// KVQ_K_ONLY, KVQ_V_ONLY: a pass that binds only one of them (attention_naive.comp).
#if defined(KVQ_K_ONLY)
uint kv_word(bool value_side, uint i) { return k_data[i]; }
#elif defined(KVQ_V_ONLY)
uint kv_word(bool value_side, uint i) { return v_data[i]; }
#else
uint kv_word(bool value_side, uint i) { return value_side ? v_data[i] : k_data[i]; }
#endif

// The first word of a head row.
uint kv_row_start(bool value_side, uint head_row) {
    return head_row * VKF_KV_ROW_WORDS(kv_format(value_side), KV_HEAD_DIM);
}

// The scale of block `blk` of the head row that starts at word `start`.
float kv_block_scale(bool value_side, uint start, uint blk) {
    const vec2 pair = unpackHalf2x16(kv_word(value_side, start + blk / 2u));
    return (blk & 1u) == 0u ? pair.x : pair.y;
}

// Signed byte `byte` (0-3) of a word, or its nibble at bit `shift` minus 8.
float kv_i8(uint w, uint byte) { return float(bitfieldExtract(int(w), int(8u * byte), 8)); }
float kv_u4(uint w, uint shift) { return float(int(bitfieldExtract(w, int(shift), 4)) - 8); }

// Elements 2p and 2p + 1 of a head row.
vec2 kv_pair(bool value_side, uint head_row, uint p) {
    const uint fmt = kv_format(value_side);
    const uint start = kv_row_start(value_side, head_row);
    if (fmt == VKF_KV_FORMAT_F16) {
        return unpackHalf2x16(kv_word(value_side, start + p));
    }
    const uint blk = p / (VKF_KV_QUANT_BLOCK / 2u);
    const float d = kv_block_scale(value_side, start, blk);
    if (fmt == VKF_KV_FORMAT_Q8_0) {
        const uint w = kv_word(value_side, start + KVQ_SCALE_WORDS + p / 2u);
        const uint byte = 2u * (p & 1u);
        return d * vec2(kv_i8(w, byte), kv_i8(w, byte + 1u));
    }
    // q4_0: element e of the block is byte e % 16's low (e < 16) or high nibble.
    const uint e = (2u * p) % VKF_KV_QUANT_BLOCK;
    const uint b = e % 16u;
    const uint w = kv_word(value_side, start + KVQ_SCALE_WORDS + blk * 4u + b / 4u);
    const uint shift = 8u * (b % 4u) + (e >= 16u ? 4u : 0u);
    return d * vec2(kv_u4(w, shift), kv_u4(w, shift + 8u));
}

// Elements 4dq .. 4dq + 3 of a head row.
vec4 kv_quad(bool value_side, uint head_row, uint dq) {
    const uint fmt = kv_format(value_side);
    const uint start = kv_row_start(value_side, head_row);
    if (fmt == VKF_KV_FORMAT_F16) {
        return vec4(unpackHalf2x16(kv_word(value_side, start + 2u * dq)),
                    unpackHalf2x16(kv_word(value_side, start + 2u * dq + 1u)));
    }
    const uint blk = dq / (VKF_KV_QUANT_BLOCK / 4u);
    const float d = kv_block_scale(value_side, start, blk);
    if (fmt == VKF_KV_FORMAT_Q8_0) {
        const uint w = kv_word(value_side, start + KVQ_SCALE_WORDS + dq);
        return d * vec4(kv_i8(w, 0u), kv_i8(w, 1u), kv_i8(w, 2u), kv_i8(w, 3u));
    }
    const uint e = (4u * dq) % VKF_KV_QUANT_BLOCK;
    const uint w = kv_word(value_side, start + KVQ_SCALE_WORDS + blk * 4u + (e % 16u) / 4u);
    const uint hi = e >= 16u ? 4u : 0u;
    return d * vec4(kv_u4(w, hi), kv_u4(w, hi + 8u), kv_u4(w, hi + 16u), kv_u4(w, hi + 24u));
}

#endif
