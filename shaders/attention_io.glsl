// Tensor storage for the attention kernels, kept apart from their fp32 arithmetic.
// Q, K, V and O are read and written as pairs of elements (head_dim is always even):
// fp32 storage as vec2, fp16 storage as one uint holding two halves, unpacked with
// unpackHalf2x16, which is core GLSL: fp16 tensors need no 16-bit storage feature.
// The row-per-invocation kernel reads them as quads (head_dim is a multiple of 4): fp32 as
// vec4, fp16 as a uvec2 holding four halves.
//
// Storage types: STORAGE_F16 makes every tensor fp16; KV_F16 makes only K and V fp16 (a
// model's fp16 KV cache), while Q and O stay fp32 (O feeds fp32 matmuls); KV_QUANT, fp32 Q
// and O over K and V each fp16 or q8_0/q4_0 blocks (kv_quant.glsl). VKF_PAIR and
// VKF_QUAD are the storage of Q and O, VKF_KV_PAIR and VKF_KV_QUAD that of K and V; the
// readers (pair_to_vec2, quad_to_vec4) are overloaded on the storage type, so a load reads
// whichever type its buffer declares.
#ifndef VKF_ATTENTION_IO_GLSL
#define VKF_ATTENTION_IO_GLSL

#include "common.glsl"

vec2 pair_to_vec2(uint w) { return unpackHalf2x16(w); }
vec2 pair_to_vec2(vec2 w) { return w; }
vec4 quad_to_vec4(uvec2 w) { return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); }
vec4 quad_to_vec4(vec4 w) { return w; }

#if defined(STORAGE_F16)
#define VKF_PAIR uint
#define VKF_QUAD uvec2
// Saturated to +-65504 (common.glsl): an overflow stays finite.
uint vec2_to_pair(vec2 v) { return pack_half2_finite(v); }
uvec2 vec4_to_quad(vec4 v) { return uvec2(pack_half2_finite(v.xy), pack_half2_finite(v.zw)); }
#else
#define VKF_PAIR vec2
#define VKF_QUAD vec4
vec2 vec2_to_pair(vec2 v) { return v; }
vec4 vec4_to_quad(vec4 v) { return v; }
#endif

// KV_QUANT: K and V as 32-bit words, each fp16 or block-quantized (kv_quant.glsl).
#if defined(STORAGE_F16) || defined(KV_F16) || defined(KV_QUANT)
#define VKF_KV_PAIR uint
#define VKF_KV_QUAD uvec2
#else
#define VKF_KV_PAIR vec2
#define VKF_KV_QUAD vec4
#endif

// Keys per split for L valid keys (VKF_ATTN_FLAG_SPLIT_BY_LENGTH), in blocks of `granule`.
uint split_length(uint L, uint granule) {
    if ((params.flags & VKF_ATTN_FLAG_SPLIT_BY_LENGTH) == 0u) {
        return params.kv_split_len;
    }
    const uint per_split = (L + params.n_splits - 1u) / params.n_splits;
    return min(params.kv_split_len, (per_split + granule - 1u) / granule * granule);
}

// Paged, ragged batches (VKF_ATTN_FLAG_PAGED). seq_word(i) is word i of the sequence table
// (interface/attention.h); the kernels that read one define it after their bindings.
uint seq_word(uint i);

bool paged_batch() { return (params.flags & VKF_ATTN_FLAG_PAGED) != 0u; }

// Where sequence b's rows start in Q and O: b * q_len in the batch layout, else the table's,
// clamped (as the counts below) so that no table can send a kernel past the q_rows rows.
uint seq_first_row(uint b) {
    if (!paged_batch()) {
        return b * params.q_len;
    }
    return min(seq_word(VKF_ATTN_SEQ_Q_START(params.batch, b)), params.q_rows);
}

// Sequence b's query rows, which start at first_row (seq_first_row).
uint seq_row_count(uint b, uint first_row) {
    if (!paged_batch()) {
        return params.q_len;
    }
    return min(min(seq_word(VKF_ATTN_SEQ_Q_LEN(params.batch, b)), params.q_len), params.q_rows - first_row);
}

// The row of K and V that holds key `key` of sequence b: through its block table when paged,
// a block id past the pool reading the pool's last block instead of past it. The table is a
// ring: with a window, positions count on past its capacity and key j lives in entry
// (j / block_size) % blocks_per_seq (the identity while j < capacity).
uint kv_row(uint b, uint key) {
    if (!paged_batch()) {
        return b * params.kv_len + key;
    }
    const uint entry = (key / params.block_size) % params.blocks_per_seq;
    const uint block = seq_word(VKF_ATTN_SEQ_BLOCK(params.batch, params.blocks_per_seq, b, entry));
    return min(block, params.pool_blocks - 1u) * params.block_size + key % params.block_size;
}

// Key counts of sequence (or batch) b: the shape's kv_len, or the table's count clamped to it,
// except in a paged ring with a window, whose positions count on past its capacity (kv_row
// keeps every read inside the ring).
uint seq_key_count(uint b) {
    if ((params.flags & VKF_ATTN_FLAG_KV_LENS) == 0u) {
        return params.kv_len;
    }
    const uint count = seq_word(VKF_ATTN_SEQ_KV_LEN(params.batch, b));
    return paged_batch() && params.window != 0u ? count : min(count, params.kv_len);
}

// Key window W (host/spec/attention_params.hpp, after llm-foundry's sliding_window_size):
// position qpos sees key j only when |qpos - j| <= W (with the causal mask: qpos - W <= j).
// The first key a query at qpos may see; keys before it are never read.
uint window_first_key(int qpos) {
    return params.window == 0u ? 0u : uint(max(qpos - int(params.window), 0));
}
// One past the last key a query at qpos may see under the window alone (not the causal mask).
uint window_key_end(int qpos, uint L) {
    return params.window == 0u ? L : uint(clamp(qpos + int(params.window) + 1, 0, int(L)));
}
bool in_window(int qpos, uint key) {
    return params.window == 0u || abs(qpos - int(key)) <= int(params.window);
}

#endif
