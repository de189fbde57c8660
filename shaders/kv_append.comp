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

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "interface/kv_append.h"
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Src { float src[]; };
#if defined(CACHE_F16)
layout(std430, binding = 1) writeonly buffer Cache { uint cache[]; };
#else
layout(std430, binding = 1) writeonly buffer Cache { float cache[]; };
#endif
#if defined(SLOTS)
layout(std430, binding = 2) readonly buffer Slots { uint slot_data[]; };
#endif

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
