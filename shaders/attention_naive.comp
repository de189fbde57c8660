#version 450
// Naive ("materialized") ALiBi attention, the baseline the tiled kernel is measured
// against. Three passes over a float32 scores buffer S[batch, n_head, q_len, kv_len]:
//
//   SCORES   one invocation per (b, h, i, j): S = scale * q_i . k_j + ALiBi bias, or -inf
//            where the key is masked (beyond L_b, after p_i under a causal mask, or outside
//            the key window W, attention_io.glsl).
//   SOFTMAX  one workgroup per row (b, h, i): S = softmax(S) in place; a row whose every
//            key is masked becomes all zeros rather than NaN.
//   PV       one invocation per (b, h, i) and pair of output dimensions d, d + 1:
//            O = sum_j S[i, j] * V[j, d]. Tensors are addressed in element pairs
//            (attention_io.glsl), so an fp16 output pair is one 32-bit word.
//
// Conventions (positions p_i = L_b - q_len + i, GQA head mapping, masks, slopes) are those
// of host/spec/attention_params.hpp. Storage is float32, or fp16 with STORAGE_F16, or fp32 Q
// and O over K and V each fp16 or q8_0/q4_0 with KV_QUANT (kv_quant.glsl); arithmetic is fp32.
//
// Paged batches (VKF_ATTN_FLAG_PAGED, host/ops/attention.hpp): b is a sequence of the table,
// its rows packed in Q and O, its keys read through its block table. The scores of rows past
// its row count are all masked (zeros after the softmax) and PV writes none of them. PV reads
// the table after the scores and the slope table, where the host copies it.

#extension GL_GOOGLE_include_directive : require

#include "interface/attention.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(constant_id = VKF_ATTN_SPEC_D) const uint HEAD_DIM = 64; // always even
const uint HEAD_PAIRS = HEAD_DIM / 2u;

#include "attention_io.glsl"

// glslang does not fold uintBitsToFloat in a global const initializer.
#define NEG_INF uintBitsToFloat(0xff800000u)

// Offsets, in element pairs, of head rows in the default layouts (docs/DESIGN.md), or of
// row `first_row + i` of Q and O and key j of sequence b in a paged batch.
uint q_row_pair(uint first_row, uint i, uint h) {
    return ((first_row + i) * params.n_head + h) * HEAD_PAIRS;
}

uint kv_row_pair(uint b, uint j, uint kv_h) {
    return (kv_row(b, j) * params.n_kv_head + kv_h) * HEAD_PAIRS;
}

// Words of the scores, after which the PACKED_TABLES variant and PV (paged) find the tables.
uint tables_base() {
    return params.batch * params.n_head * params.q_len * params.kv_len;
}

// Valid keys of sequence (or batch) b.
#define VKF_VALID_KEYS(b) seq_key_count(b)

// Score column j holds key key_base + j. A paged ring with a window counts positions past its
// kv_len (capacity): its row then starts at the first key the sequence's first row may see
// (the host keeps W + q_len within the capacity), else at key 0.
uint key_base(uint L, uint q_len) {
    return paged_batch() && params.window != 0u ? window_first_key(int(L) - int(q_len)) : 0u;
}

uint score_row_offset(uint b, uint h, uint i) {
    return ((b * params.n_head + h) * params.q_len + i) * params.kv_len;
}

#if defined(SCORES)

layout(std430, binding = 0) readonly buffer QBuffer { VKF_PAIR q_data[]; };
#if defined(KV_QUANT)
layout(std430, binding = 1) readonly buffer KBuffer { uint k_data[]; };
#define KVQ_K_ONLY
#define KV_HEAD_DIM HEAD_DIM
#include "kv_quant.glsl"
#else
layout(std430, binding = 1) readonly buffer KBuffer { VKF_PAIR k_data[]; };
#endif
#if defined(PACKED_TABLES)
// Devices with 4 storage buffers per stage: the slope table (n_head floats) and the key
// counts (batch uints) follow the scores in their buffer, 3 bindings in all.
layout(std430, binding = 2) writeonly buffer ScoreBuffer { float scores[]; };
layout(std430, binding = 2) readonly buffer Tables { float tables_f[]; };
layout(std430, binding = 2) readonly buffer TablesU { uint tables_u[]; };
#define VKF_SLOPE(h) tables_f[tables_base() + (h)]
uint seq_word(uint i) { return tables_u[tables_base() + params.n_head + i]; }
#else
layout(std430, binding = 2) readonly buffer SlopeBuffer { float slope_table[]; };
// The key counts, or the sequence table of a paged batch (which starts with them).
layout(std430, binding = 3) readonly buffer KvLenBuffer { uint kv_lens[]; };
layout(std430, binding = 4) writeonly buffer ScoreBuffer { float scores[]; };
uint seq_word(uint i) { return kv_lens[i]; }
#endif

#include "alibi.glsl"

void main() {
    const uint j = gl_GlobalInvocationID.x;
    const uint i = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / params.n_head;
    const uint h = gl_WorkGroupID.z % params.n_head;
    if (j >= params.kv_len) {
        return;
    }

    const uint first_row = seq_first_row(b);
    const uint q_len = seq_row_count(b, first_row);
    const uint valid_keys = VKF_VALID_KEYS(b);
    const int qpos = int(valid_keys) - int(q_len) + int(i);
    const uint key = key_base(valid_keys, q_len) + j;
    const bool masked = i >= q_len || key >= valid_keys ||
                        ((params.flags & VKF_ATTN_FLAG_CAUSAL_MASK) != 0u && int(key) > qpos) || !in_window(qpos, key);

    float score = NEG_INF;
    if (!masked) {
        const uint kv_h = h / (params.n_head / params.n_kv_head);
        const uint q_row = q_row_pair(first_row, i, h);
        float acc = 0.0;
#if defined(KV_QUANT)
        const uint k_key_row = kv_row(b, key);
        for (uint p = 0u; p < HEAD_PAIRS; ++p) {
            acc += dot(pair_to_vec2(q_data[q_row + p]), kv_pair(false, k_key_row, kv_h, p));
        }
#else
        const uint k_row = kv_row_pair(b, key, kv_h);
        for (uint p = 0u; p < HEAD_PAIRS; ++p) {
            acc += dot(pair_to_vec2(q_data[q_row + p]), pair_to_vec2(k_data[k_row + p]));
        }
#endif
        score = params.scale * acc;
        if ((params.flags & (VKF_ATTN_FLAG_ALIBI_CAUSAL | VKF_ATTN_FLAG_ALIBI_SYMMETRIC)) != 0u) {
            score += alibi_bias(alibi_slope_of_head(h, valid_keys), qpos, int(key));
        }
    }
    scores[score_row_offset(b, h, i) + j] = score;
}

#elif defined(SOFTMAX)

layout(std430, binding = 0) buffer ScoreBuffer { float scores[]; };

// gl_WorkGroupSize.x is a power of two (chosen by the host) for the tree reductions.
shared float reduction[gl_WorkGroupSize.x];

float workgroup_max(float value) {
    const uint t = gl_LocalInvocationID.x;
    reduction[t] = value;
    barrier();
    for (uint stride = gl_WorkGroupSize.x / 2u; stride > 0u; stride /= 2u) {
        if (t < stride) {
            reduction[t] = max(reduction[t], reduction[t + stride]);
        }
        barrier();
    }
    const float result = reduction[0];
    // Nobody may overwrite reduction[0] for the next reduction before everyone read it.
    barrier();
    return result;
}

float workgroup_sum(float value) {
    const uint t = gl_LocalInvocationID.x;
    reduction[t] = value;
    barrier();
    for (uint stride = gl_WorkGroupSize.x / 2u; stride > 0u; stride /= 2u) {
        if (t < stride) {
            reduction[t] += reduction[t + stride];
        }
        barrier();
    }
    const float result = reduction[0];
    barrier();
    return result;
}

void main() {
    const uint i = gl_WorkGroupID.x;
    const uint h = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint t = gl_LocalInvocationID.x;
    const uint row = score_row_offset(b, h, i);

    float local_max = NEG_INF;
    for (uint j = t; j < params.kv_len; j += gl_WorkGroupSize.x) {
        local_max = max(local_max, scores[row + j]);
    }
    const float row_max = workgroup_max(local_max);

    if (row_max == NEG_INF) {
        // Every key is masked: the output row is zero by convention.
        for (uint j = t; j < params.kv_len; j += gl_WorkGroupSize.x) {
            scores[row + j] = 0.0;
        }
        return;
    }

    // Each invocation revisits only the entries it wrote itself, so no barrier is needed
    // between writing exp() and normalizing. Masked entries are zeroed explicitly rather
    // than trusting exp(-inf) on every driver.
    float local_sum = 0.0;
    for (uint j = t; j < params.kv_len; j += gl_WorkGroupSize.x) {
        const float s = scores[row + j];
        const float e = s == NEG_INF ? 0.0 : exp(s - row_max);
        scores[row + j] = e;
        local_sum += e;
    }
    const float row_sum = workgroup_sum(local_sum);

    for (uint j = t; j < params.kv_len; j += gl_WorkGroupSize.x) {
        scores[row + j] = scores[row + j] / row_sum;
    }
}

#elif defined(PV)

layout(std430, binding = 0) readonly buffer ProbBuffer { float probs[]; };
layout(std430, binding = 0) readonly buffer TableBuffer { uint tables_u[]; };
#if defined(KV_QUANT)
layout(std430, binding = 1) readonly buffer VBuffer { uint v_data[]; };
#define KVQ_V_ONLY
#define KV_HEAD_DIM HEAD_DIM
#include "kv_quant.glsl"
#else
layout(std430, binding = 1) readonly buffer VBuffer { VKF_PAIR v_data[]; };
#endif
layout(std430, binding = 2) writeonly buffer OBuffer { VKF_PAIR o_data[]; };
uint seq_word(uint i) { return tables_u[tables_base() + params.n_head + i]; }

void main() {
    const uint p = gl_GlobalInvocationID.x; // the pair of dimensions 2p, 2p + 1
    const uint i = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / params.n_head;
    const uint h = gl_WorkGroupID.z % params.n_head;
    if (p >= HEAD_PAIRS) {
        return;
    }

    const uint first_row = seq_first_row(b);
    if (i >= seq_row_count(b, first_row)) {
        return;
    }

    const uint kv_h = h / (params.n_head / params.n_kv_head);
    const uint row = score_row_offset(b, h, i);
    // A paged sequence's keys past its count are no rows of its own (the pool's other
    // contents, which even a zero probability must not multiply: NaN * 0 is NaN). Keys of
    // zero probability (masked, out of the window) are not read at all: the model may have
    // freed or reused them.
    const uint base = paged_batch() ? key_base(VKF_VALID_KEYS(b), seq_row_count(b, first_row)) : 0u;
    const uint keys = paged_batch() ? min(VKF_VALID_KEYS(b) - base, params.kv_len) : params.kv_len;
    vec2 acc = vec2(0.0);
    for (uint j = 0u; j < keys; ++j) {
        const float prob = probs[row + j];
        if (prob != 0.0) {
#if defined(KV_QUANT)
            acc += prob * kv_pair(true, kv_row(b, base + j), kv_h, p);
#else
            acc += prob * pair_to_vec2(v_data[kv_row_pair(b, base + j, kv_h) + p]);
#endif
        }
    }
    o_data[q_row_pair(first_row, i, h) + p] = vec2_to_pair(acc);
}

#else
#error "define SCORES, SOFTMAX or PV"
#endif
