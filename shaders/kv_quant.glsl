// K and V of the KV_QUANT variants: each stored as fp16 or in q8_0/q4_0 blocks
// (interface/kv_quant.h), chosen by a specialization constant apiece, read and dequantized
// to fp32 as element pairs or quads. The includer declares k_data and v_data as uint arrays
// (or one of them, below), params with n_kv_head, and defines KV_HEAD_DIM (the head size, a
// multiple of 32). A head row is named by its key row (the cache row) and KV head. Branches
// on the formats fold at pipeline creation.
#ifndef VKF_KV_QUANT_GLSL
#define VKF_KV_QUANT_GLSL

#include "interface/kv_quant.h"

layout(constant_id = VKF_ATTN_SPEC_K_FORMAT) const uint K_FORMAT = VKF_KV_FORMAT_F16;
layout(constant_id = VKF_ATTN_SPEC_V_FORMAT) const uint V_FORMAT = VKF_KV_FORMAT_F16;

const uint KVQ_HEAD_BLOCKS = KV_HEAD_DIM / VKF_KV_QUANT_BLOCK;

uint kv_format(bool value_side) { return value_side ? V_FORMAT : K_FORMAT; }
// KVQ_K_ONLY, KVQ_V_ONLY: a pass that binds only one of them (attention_naive.comp).
#if defined(KVQ_K_ONLY)
uint kv_word(bool value_side, uint i) { return k_data[i]; }
#elif defined(KVQ_V_ONLY)
uint kv_word(bool value_side, uint i) { return v_data[i]; }
#else
uint kv_word(bool value_side, uint i) { return value_side ? v_data[i] : k_data[i]; }
#endif

// Values of a key row (all KV heads of one key).
uint kv_key_values() { return params.n_kv_head * KV_HEAD_DIM; }

// The first word of a key row.
uint kv_row_start(bool value_side, uint key_row) {
    return key_row * VKF_KV_ROW_WORDS(kv_format(value_side), kv_key_values());
}

// The scale of block `blk` of the key row that starts at word `start`.
float kv_block_scale(bool value_side, uint start, uint blk) {
    const vec2 pair = unpackHalf2x16(kv_word(value_side, start + blk / 2u));
    return (blk & 1u) == 0u ? pair.x : pair.y;
}

// Signed byte `byte` (0-3) of a word, or its nibble at bit `shift` minus 8.
float kv_i8(uint w, uint byte) { return float(bitfieldExtract(int(w), int(8u * byte), 8)); }
float kv_u4(uint w, uint shift) { return float(int(bitfieldExtract(w, int(shift), 4)) - 8); }

// Elements 2p and 2p + 1 of the head row of KV head `kv_head` in key row `key_row`.
vec2 kv_pair(bool value_side, uint key_row, uint kv_head, uint p) {
    const uint fmt = kv_format(value_side);
    const uint start = kv_row_start(value_side, key_row);
    if (fmt == VKF_KV_FORMAT_F16) {
        return unpackHalf2x16(kv_word(value_side, start + kv_head * (KV_HEAD_DIM / 2u) + p));
    }
    const uint blk = kv_head * KVQ_HEAD_BLOCKS + p / (VKF_KV_QUANT_BLOCK / 2u); // in the key row
    const float d = kv_block_scale(value_side, start, blk);
    const uint values = start + VKF_KV_SCALE_WORDS(kv_key_values());
    if (fmt == VKF_KV_FORMAT_Q8_0) {
        const uint w = kv_word(value_side, values + kv_head * (KV_HEAD_DIM / 4u) + p / 2u);
        const uint byte = 2u * (p & 1u);
        return d * vec2(kv_i8(w, byte), kv_i8(w, byte + 1u));
    }
    // q4_0: element e of the block is byte e % 16's low (e < 16) or high nibble.
    const uint e = (2u * p) % VKF_KV_QUANT_BLOCK;
    const uint b = e % 16u;
    const uint w = kv_word(value_side, values + blk * 4u + b / 4u);
    const uint shift = 8u * (b % 4u) + (e >= 16u ? 4u : 0u);
    return d * vec2(kv_u4(w, shift), kv_u4(w, shift + 8u));
}

// Elements 4dq .. 4dq + 3 of the head row of KV head `kv_head` in key row `key_row`.
vec4 kv_quad(bool value_side, uint key_row, uint kv_head, uint dq) {
    const uint fmt = kv_format(value_side);
    const uint start = kv_row_start(value_side, key_row);
    if (fmt == VKF_KV_FORMAT_F16) {
        const uint w = start + kv_head * (KV_HEAD_DIM / 2u) + 2u * dq;
        return vec4(unpackHalf2x16(kv_word(value_side, w)), unpackHalf2x16(kv_word(value_side, w + 1u)));
    }
    const uint blk = kv_head * KVQ_HEAD_BLOCKS + dq / (VKF_KV_QUANT_BLOCK / 4u);
    const float d = kv_block_scale(value_side, start, blk);
    const uint values = start + VKF_KV_SCALE_WORDS(kv_key_values());
    if (fmt == VKF_KV_FORMAT_Q8_0) {
        const uint w = kv_word(value_side, values + kv_head * (KV_HEAD_DIM / 4u) + dq);
        return d * vec4(kv_i8(w, 0u), kv_i8(w, 1u), kv_i8(w, 2u), kv_i8(w, 3u));
    }
    const uint e = (4u * dq) % VKF_KV_QUANT_BLOCK;
    const uint w = kv_word(value_side, values + blk * 4u + (e % 16u) / 4u);
    const uint hi = e >= 16u ? 4u : 0u;
    return d * vec4(kv_u4(w, hi), kv_u4(w, hi + 8u), kv_u4(w, hi + 16u), kv_u4(w, hi + 24u));
}

#endif
