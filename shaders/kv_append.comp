#version 450
// KV-cache append: copies new_len rows of K or V into a cache [batch, max_len, n_kv_head,
// head_dim] at rows pos..pos+new_len-1, converting to fp16 for an fp16 cache (CACHE_F16).
// The source is fp32 with explicit strides, so the K or V part of a fused QKV projection
// can be read in place: BLOOM's per-token [n_head, 3, head_dim] and MPT's [q | k | v]
// layouts are both strided views. With max_len = new_len and pos = 0 the same kernel
// repacks Q into attention's [batch, q_len, n_head, head_dim]. SLOTS (batch 1): row t goes
// to cache row slots[t] instead (a paged cache's slot mapping), and a slot >= max_len
// writes nothing: the slots are written after recording, and a padding row's must not
// reach memory past the cache.
// One invocation per pair of elements (head_dim is even). Grid: x = pairs of a token's
// heads / WG, y = new rows, z = batch.
//
// CACHE_Q8_0, CACHE_Q4_0: a block-quantized cache (interface/kv_quant.h), quantized here
// with the rules of host/quant/quant_format.hpp (quantize_row: the scale chosen from the
// block, rounded to fp16, the values rounded against the rounded scale); one invocation per
// scale word of a key row (its two blocks, which may belong to two heads), which writes the
// word whole. x = a key row's scale words / WG; cache_base counts words.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "interface/kv_append.h"
#include "interface/kv_quant.h"
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Src { float src[]; };
#if defined(CACHE_Q8_0) || defined(CACHE_Q4_0)
#define CACHE_QUANT
layout(std430, binding = 1) writeonly buffer Cache { uint cache[]; };
#elif defined(CACHE_F16)
layout(std430, binding = 1) writeonly buffer Cache { uint cache[]; };
#else
layout(std430, binding = 1) writeonly buffer Cache { float cache[]; };
#endif
#if defined(SLOTS)
layout(std430, binding = 2) readonly buffer Slots { uint slot_data[]; };
#endif

#if defined(CACHE_QUANT)
// x rounded half away from zero, as std::round (the host's quantize_row).
int round_away(float x) { return int(sign(x) * floor(abs(x) + 0.5)); }

// x / d rounded half away from zero (d != 0), as the host's correctly rounded division gives
// it. A driver's division may be a reciprocal estimate (Vulkan allows 2.5 ULP), so the
// quotient's rounding is checked against the residual x - q d, exact where it matters:
// |q| <= 127 and d an fp16, so q d is exact in fp32 and the subtraction correctly rounded.
int divide_round(float x, float d) {
    const float s = d < 0.0 ? -1.0 : 1.0;
    const float xa = x * s;
    const float da = d * s;
    int q = round_away(xa / da);
    const float r = xa - float(q) * da;
    const float half_d = 0.5 * da;
    if (r > half_d || (r == half_d && xa > 0.0)) {
        q += 1;
    } else if (r < -half_d || (r == -half_d && xa < 0.0)) {
        q -= 1;
    }
    return q;  // xa / da is x / d: q is its rounding
}

#if defined(CACHE_Q8_0)
const uint FORMAT = VKF_KV_FORMAT_Q8_0;
#else
const uint FORMAT = VKF_KV_FORMAT_Q4_0;
#endif

// Quantizes the block whose first source element is src[first], writing its values at
// `values`; returns the fp16 scale bits.
uint quantize_block(uint first, uint values) {
    float extreme = 0.0; // the element of largest magnitude, sign kept (the first of equals)
    for (uint i = 0u; i < VKF_KV_QUANT_BLOCK; ++i) {
        const float x = src[first + i];
        if (abs(x) > abs(extreme)) {
            extreme = x;
        }
    }
#if defined(CACHE_Q8_0)
    const uint bits = packHalf2x16(vec2(finite_f16(abs(extreme) / 127.0), 0.0));
    const float d = unpackHalf2x16(bits).x;
    for (uint w = 0u; w < VKF_KV_QUANT_BLOCK / 4u; ++w) {
        uint word = 0u;
        for (uint j = 0u; j < 4u; ++j) {
            const int q = d == 0.0 ? 0 : clamp(divide_round(src[first + 4u * w + j], d), -127, 127);
            word |= (uint(q) & 0xFFu) << (8u * j);
        }
        cache[values + w] = word;
    }
#else
    const uint bits = packHalf2x16(vec2(finite_f16(extreme / -8.0), 0.0));
    const float d = unpackHalf2x16(bits).x;
    for (uint w = 0u; w < VKF_KV_QUANT_BLOCK / 8u; ++w) {
        uint word = 0u;
        for (uint j = 0u; j < 4u; ++j) {
            const uint i = 4u * w + j; // byte i: element i low, element i + 16 high
            const uint lo = d == 0.0 ? 8u : uint(clamp(divide_round(src[first + i], d) + 8, 0, 15));
            const uint hi = d == 0.0 ? 8u : uint(clamp(divide_round(src[first + i + 16u], d) + 8, 0, 15));
            word |= (lo | (hi << 4u)) << (8u * j);
        }
        cache[values + w] = word;
    }
#endif
    return bits;
}

// Source element of block i of key row t of batch b (block i % blocks of head i / blocks).
uint block_source(uint b, uint t, uint i) {
    const uint blocks = params.head_dim / VKF_KV_QUANT_BLOCK;
    return params.src_base + b * params.src_batch_stride + t * params.src_token_stride +
           (i / blocks) * params.src_head_stride + (i % blocks) * VKF_KV_QUANT_BLOCK;
}

void main() {
    const uint sw = gl_GlobalInvocationID.x; // scale word of the key row: blocks 2sw, 2sw + 1
    const uint t = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint row_values = params.n_kv_head * params.head_dim;
    const uint scale_words = VKF_KV_SCALE_WORDS(row_values);
    if (sw >= scale_words) {
        return;
    }
#if defined(SLOTS)
    const uint row = slot_data[params.slots_base + t];
    if (row >= params.max_len) {
        return;
    }
#else
    const uint row = params.pos + t;
#endif
    const uint start = params.cache_base + (b * params.max_len + row) * VKF_KV_ROW_WORDS(FORMAT, row_values);
    const uint block_words = FORMAT == VKF_KV_FORMAT_Q8_0 ? 8u : 4u;
    const uint values = start + scale_words;
    const uint lo = quantize_block(block_source(b, t, 2u * sw), values + 2u * sw * block_words);
    uint hi = 0u;
    if (2u * sw + 1u < row_values / VKF_KV_QUANT_BLOCK) {
        hi = quantize_block(block_source(b, t, 2u * sw + 1u), values + (2u * sw + 1u) * block_words);
    }
    cache[start + sw] = lo | (hi << 16u);
}
#else
void main() {
    const uint pair = gl_GlobalInvocationID.x;
    const uint t = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint pairs_per_head = params.head_dim / 2u;
    if (pair >= params.n_kv_head * pairs_per_head) {
        return;
    }
    const uint h = pair / pairs_per_head;
    const uint d = 2u * (pair % pairs_per_head);
    const uint s = params.src_base + b * params.src_batch_stride + t * params.src_token_stride +
                   h * params.src_head_stride + d;
#if defined(SLOTS)
    const uint row = slot_data[params.slots_base + t];
    if (row >= params.max_len) {
        return;
    }
#else
    const uint row = params.pos + t;
#endif
    const vec2 v = vec2(src[s], src[s + 1u]);
    const uint dst = params.cache_base + ((b * params.max_len + row) * params.n_kv_head + h) * params.head_dim + d;
#if defined(CACHE_F16)
    cache[dst >> 1u] = pack_half2_finite(v); // saturated: an overflow stays finite
#else
    cache[dst] = v.x;
    cache[dst + 1u] = v.y;
#endif
}
#endif
