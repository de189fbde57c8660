#version 450
// Tiled ("flash") attention with ALiBi, FlashAttention-2 style.
//
// Grid: x = query tiles of BR rows, y = query heads, z = batch * n_splits.
// A workgroup owns BR query rows of one (batch, head) and, in the split-KV variant, one
// slice of the keys. It streams K and V through one shared tile of BC keys, keeps each
// row's running max and sum (online softmax) in registers, and writes every output row
// once: no score or bias matrix exists in memory. TPR invocations share a query row: each
// scores BC/TPR keys of the tile and accumulates ceil(D/(2*TPR)) pairs of output dimensions.
//
// Any even D: rows are held as vec4 quads, the last one zero-padded when D % 4 == 2, and a
// lane's pairs past D/2 (D/2 not a multiple of TPR) are skipped. The guards test
// specialization constants first, so for the tuned sizes (D a multiple of 4 and D/2 of TPR)
// the driver folds them away and the code is that of a kernel without them.
//
// Variants: STORAGE_F16 (fp16 tensors, fp32 arithmetic), KV_F16 (fp16 K and V only: a
// model's fp16 KV cache with fp32 Q and O), KV_QUANT (fp32 Q and O over K and V each fp16,
// q8_0 or q4_0, dequantized as the tiles are loaded: kv_quant.glsl), SPLIT_KV (write unnormalized partial rows plus
// (max, sum) for attention_combine.comp instead of the output), PACKED_TABLES (with SPLIT_KV:
// 4 storage buffers, the slope table and key counts read from the partials' binding),
// SUBGROUP_REDUCE (the row max and sum over the TPR lanes of a row, and the probabilities P*V
// reads, by subgroup shuffles instead of shared memory; the host requires full subgroups of a
// size TPR divides), SUBGROUP_REDUCE+SUBGROUP_ANY_SIZE (no required size: the kernel checks its
// subgroups once per workgroup and takes the shuffles or shared memory, attention_reduce.glsl),
// ARITH_F16 (Q*K and P*V in fp16 with fp32 statistics; see below).
//
// ARITH_F16 (docs/DESIGN.md, "fp16 arithmetic in attention"): the Q and K/V tiles hold halves.
// Q is multiplied by the softmax scale in fp32 before it is rounded, so the f16 products are
// of the score's own size; each score is summed in f16 over groups of QK_GROUP quads (8
// elements) and the groups in fp32, so no f16 sum holds more than 8 products. Probabilities
// are taken relative to their tile's own max (<= 1, the largest exactly 1), rounded to f16,
// and P*V sums PV_GROUP of them per f16 accumulator, flushed into the fp32 accumulator times
// exp(tile max - running max); the row sum adds the same rounded probabilities, so the output
// stays a weighted mean of V. The running max, the sums and the rescaling are fp32.
//
// Paged batches (VKF_ATTN_FLAG_PAGED): z's batch index is a sequence of the table, whose
// rows are packed in Q and O and whose keys are read through its block table; the query
// tiles past its row count leave at once (the grid is sized for the longest).

#extension GL_GOOGLE_include_directive : require
#if defined(ARITH_F16)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#if defined(SUBGROUP_REDUCE)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#if defined(SUBGROUP_ANY_SIZE) && !defined(SUBGROUP_REDUCE)
#error "SUBGROUP_ANY_SIZE is a form of SUBGROUP_REDUCE"
#endif

#include "interface/attention.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(constant_id = VKF_ATTN_SPEC_BR) const uint BR = 16;  // query rows per workgroup
layout(constant_id = VKF_ATTN_SPEC_BC) const uint BC = 32;  // keys per shared tile
layout(constant_id = VKF_ATTN_SPEC_TPR) const uint TPR = 8; // invocations per query row
layout(constant_id = VKF_ATTN_SPEC_D) const uint D = 64;    // head_dim

const uint DP = D / 2u;              // element pairs per head row
const uint PAIRS_PER_THREAD = (DP + TPR - 1u) / TPR;
const bool PAIRS_SPLIT_EVENLY = DP % TPR == 0u; // no lane has a pair slot past DP
const uint KEYS_PER_LANE = BC / TPR;  // the host keeps BC a multiple of TPR
const uint WG = BR * TPR;            // must equal local_size_x
const uint DQ = (D + 3u) / 4u;       // vec4 quads per head row, the last zero-padded if D % 4 == 2
const bool NO_PAD_PAIR = 2u * DQ == DP; // else the last quad's upper pair lies past the row
// In quads, odd: consecutive tile rows start in different banks (DQ + 1 for the tuned sizes,
// whose DQ is even; DQ itself when it is odd, e.g. 63 quads for D = 250).
const uint KV_STRIDE = DQ + 1u - DQ % 2u;
const float MASKED = -3.0e38;        // finite: no reliance on infinities in exp()
#if defined(ARITH_F16)
#define TILE_QUAD f16vec4
#define TILE_PAIR f16vec2
const uint QK_GROUP = 2u;  // quads per f16 partial score (8 products), then fp32
const uint PV_GROUP = 8u;  // keys per f16 P*V accumulator, then fp32
#else
#define TILE_QUAD vec4
#define TILE_PAIR vec2
#endif

#include "attention_io.glsl"

layout(std430, binding = 0) readonly buffer QBuf { VKF_PAIR q_data[]; };
layout(std430, binding = 1) readonly buffer KBuf { VKF_KV_PAIR k_data[]; };
layout(std430, binding = 2) readonly buffer VBuf { VKF_KV_PAIR v_data[]; };
#if defined(KV_QUANT)
#define KV_HEAD_DIM D
#include "kv_quant.glsl"
#endif
#if defined(SPLIT_KV)
// Per (batch, head, row, split): D unnormalized output values, then the row max and sum.
layout(std430, binding = 3) writeonly buffer Partials { float partials[]; };
#else
layout(std430, binding = 3) writeonly buffer OBuf { VKF_PAIR o_data[]; };
#endif
#if defined(PACKED_TABLES)
// Devices with 4 storage buffers per shader stage (Vulkan's minimum): the slope table
// (n_head floats) and the key counts (batch uints) follow the partial records in binding 3,
// where the host put them, instead of bindings of their own. Always with SPLIT_KV.
layout(std430, binding = 3) readonly buffer Tables { float tables_f[]; };
layout(std430, binding = 3) readonly buffer TablesU { uint tables_u[]; };
uint tables_base() {
    return params.batch * params.n_head * params.q_len * params.n_splits * (D + 2u);
}
#define VKF_SLOPE(h) tables_f[tables_base() + (h)]
uint seq_word(uint i) { return tables_u[tables_base() + params.n_head + i]; }
#else
layout(std430, binding = 4) readonly buffer Slopes { float slope_table[]; };
// The key counts ([batch]), or the sequence table of a paged batch (which starts with them).
layout(std430, binding = 5) readonly buffer KvLens { uint kv_lens[]; };
uint seq_word(uint i) { return kv_lens[i]; }
#endif

#include "alibi.glsl"

// A Q or K/V pair as the tiles hold it. ARITH_F16: fp16 storage as its halves (exact), fp32
// saturated to +-65504 (common.glsl) and rounded.
#if defined(ARITH_F16)
f16vec2 tile_pair(uint w) { return unpackFloat2x16(w); }
f16vec2 tile_pair(vec2 w) { return f16vec2(finite_f16(w)); }
#else
vec2 tile_pair(uint w) { return unpackHalf2x16(w); }
vec2 tile_pair(vec2 w) { return w; }
#endif

shared TILE_QUAD q_tile[BR * DQ];
shared TILE_QUAD kv_tile[BC * KV_STRIDE];

void load_kv_tile(uint b, uint kv_head, uint key0, uint key_end, bool load_v) {
    for (uint e = gl_LocalInvocationID.x; e < BC * DP; e += WG) {
        const uint c = e / DP;
        const uint p = e % DP;
        const uint key = key0 + c;
        TILE_PAIR value = TILE_PAIR(0.0);
        if (key < key_end) {
#if defined(KV_QUANT)
            value = tile_pair(kv_pair(load_v, kv_row(b, key), kv_head, p));
#else
            const uint head_row = kv_row(b, key) * params.n_kv_head + kv_head;
            value = load_v ? tile_pair(v_data[head_row * DP + p]) : tile_pair(k_data[head_row * DP + p]);
#endif
        }
        if ((p & 1u) == 0u) {
            kv_tile[c * KV_STRIDE + p / 2u].xy = value;
        } else {
            kv_tile[c * KV_STRIDE + p / 2u].zw = value;
        }
    }
}

#include "attention_reduce.glsl"

// q . k of query row r and tile key c, the query already scaled.
float score_dot(uint r, uint c) {
    float dot_qk = 0.0;
#if defined(ARITH_F16)
    float16_t part = float16_t(0.0);
    for (uint dq = 0u; dq < DQ; ++dq) {
        part += dot(q_tile[r * DQ + dq], kv_tile[c * KV_STRIDE + dq]);
        if (dq % QK_GROUP == QK_GROUP - 1u || dq == DQ - 1u) {
            dot_qk += float(part);
            part = float16_t(0.0);
        }
    }
#else
    for (uint dq = 0u; dq < DQ; ++dq) {
        dot_qk += dot(q_tile[r * DQ + dq], kv_tile[c * KV_STRIDE + dq]);
    }
#endif
    return dot_qk;
}

void main() {
#if defined(SUBGROUP_ANY_SIZE)
    sg_path = subgroup_numbering_holds();  // the same in the whole workgroup
#endif
    const uint tid = invocation_index();
    const uint row_lane0 = row_first_lane();  // the subgroup path's
    const uint row_local = tid / TPR;
    const uint lane = tid % TPR;
    const uint row0 = gl_WorkGroupID.x * BR;
    const uint head = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / params.n_splits;
    const uint split = gl_WorkGroupID.z % params.n_splits;
    const uint kv_head = head / (params.n_head / params.n_kv_head);
    const bool causal = (params.flags & VKF_ATTN_FLAG_CAUSAL_MASK) != 0u;

    // This sequence's rows: first_row .. first_row + q_len - 1 of Q and O. The test is uniform
    // over the workgroup, so that no invocation leaves before a barrier the others reach.
    const uint first_row = seq_first_row(b);
    const uint q_len = seq_row_count(b, first_row);
    if (row0 >= q_len) {
        return;
    }

    // Valid keys of this batch; query row i sits at position L - q_len + i.
    const uint L = seq_key_count(b);
    const uint row = row0 + row_local;
    const bool row_valid = row < q_len;
    const int qpos = int(L) - int(q_len) + int(row);
    const float slope = alibi_slope_of_head(head, L);

    // Keys this workgroup visits: those some row of it may see. Causal tiles past the group's
    // last row are skipped, and with a window W the keys before its first row's window (the
    // loop starts at the window, so prefill costs O(L * W) and decode O(W)); split-KV splits
    // only that range. Every key of [range_begin, range_end) is visible to a row of the group.
    const int first_pos = int(L) - int(q_len) + int(row0);
    const int last_pos = int(L) - int(q_len) + int(min(row0 + BR, q_len)) - 1;
    const uint range_begin = window_first_key(first_pos);
    uint range_end = window_key_end(last_pos, L);
    if (causal) {
        range_end = min(range_end, uint(max(last_pos + 1, 0)));
    }
    const uint split_len = split_length(params.window == 0u ? L : max(range_end, range_begin) - range_begin, BC);
    const uint key_begin = range_begin + split * split_len;
    const uint key_end = min(range_end, key_begin + split_len);

    // The pad pairs (D % 4 == 2) are zero, so that they add nothing to the scores' dot products;
    // the tile loads never write them. The first tile's barrier orders these stores.
    if (!NO_PAD_PAIR) {
        for (uint r = tid; r < BR; r += WG) {
            q_tile[r * DQ + DQ - 1u].zw = TILE_PAIR(0.0);
        }
        for (uint c = tid; c < BC; c += WG) {
            kv_tile[c * KV_STRIDE + DQ - 1u].zw = TILE_PAIR(0.0);
        }
    }
    for (uint e = tid; e < BR * DP; e += WG) {
        const uint r = e / DP;
        const uint p = e % DP;
        vec2 value = vec2(0.0);
        if (row0 + r < q_len) {
            value = pair_to_vec2(q_data[((first_row + row0 + r) * params.n_head + head) * DP + p]);
        }
        // Scaled in fp32 before any rounding to f16 (ARITH_F16): the products are the scores'.
        const TILE_PAIR scaled = tile_pair(value * params.scale);
        if ((p & 1u) == 0u) {
            q_tile[r * DQ + p / 2u].xy = scaled;
        } else {
            q_tile[r * DQ + p / 2u].zw = scaled;
        }
    }

    // Each lane scores its own BC/TPR keys of a tile and exponentiates only those; the lanes
    // of a row agree on the running max (through lane_stats, or shuffles), and each keeps a
    // partial row sum (every lane rescales by the same factor, so the partial sums add up at
    // the end).
    float row_max = MASKED;
    float lane_sum = 0.0;
    vec2 acc[PAIRS_PER_THREAD];
    for (uint k = 0u; k < PAIRS_PER_THREAD; ++k) {
        acc[k] = vec2(0.0);
    }
    float own_scores[KEYS_PER_LANE];  // then the probabilities, with SUBGROUP_REDUCE

    for (uint key0 = key_begin; key0 < key_end; key0 += BC) {
        barrier(); // the previous tile's V and probabilities are no longer read
        load_kv_tile(b, kv_head, key0, key_end, false);
        barrier();

        float lane_max = MASKED;
        for (uint i = 0u; i < KEYS_PER_LANE; ++i) {
            const uint c = lane + i * TPR;
            const uint key = key0 + c;
            float s = MASKED;
            if (row_valid && key < key_end && (!causal || int(key) <= qpos) && in_window(qpos, key)) {
                s = score_dot(row_local, c) + alibi_bias(slope, qpos, int(key));
            }
            own_scores[i] = s;
            lane_max = max(lane_max, s);
        }
        const float row_lane_max = tile_max_publish(row_local, lane, lane_max);
        barrier(); // scores and lane maxima complete, K no longer read
        load_kv_tile(b, kv_head, key0, key_end, true);
        const float tile_max = tile_max_collect(row_local, row_lane_max);
        const float new_max = max(row_max, tile_max);
        const bool tile_has_keys = tile_max > 0.5 * MASKED;
        if (tile_has_keys) {
            const float correction = row_max > 0.5 * MASKED ? exp(row_max - new_max) : 0.0;
            lane_sum *= correction;
            for (uint k = 0u; k < PAIRS_PER_THREAD; ++k) {
                acc[k] *= correction;
            }
            row_max = new_max;
        }
#if defined(ARITH_F16)
        // Relative to the tile's max, so that the largest is 1 and an fp16 underflow drops at
        // most BC tiny terms of a tile that holds a 1; the tile's share is scaled in fp32.
        const float p_base = tile_max;
        const float tile_scale = tile_has_keys ? exp(tile_max - new_max) : 0.0;
#else
        const float p_base = new_max;
#endif
        float tile_sum = 0.0;
        for (uint i = 0u; i < KEYS_PER_LANE; ++i) {
            const float s = own_scores[i];
            float p = s > 0.5 * MASKED ? exp(s - p_base) : 0.0;
#if defined(ARITH_F16)
            p = float(float16_t(p)); // the weight P*V uses: the sum adds the same
#endif
            tile_sum += p;
            own_scores[i] = p;
            keep_probability(row_local, lane + i * TPR, p);
        }
#if defined(ARITH_F16)
        lane_sum += tile_scale * tile_sum;
#else
        lane_sum += tile_sum;
#endif
        barrier(); // V and probabilities complete

        if (pv_needed(tile_has_keys)) {
#if defined(ARITH_F16)
            f16vec2 part[PAIRS_PER_THREAD];
            for (uint k = 0u; k < PAIRS_PER_THREAD; ++k) {
                part[k] = f16vec2(0.0);
            }
#endif
            // Key c = i * TPR + l, whose probability lane l of the row holds as own_scores[i].
            for (uint i = 0u; i < KEYS_PER_LANE; ++i) {
                for (uint l = 0u; l < TPR; ++l) {
                    const uint c = i * TPR + l;
                    const float p = probability_of(row_local, row_lane0, own_scores[i], l, c);
#if defined(ARITH_F16)
                    const f16vec2 ph = f16vec2(float16_t(p));
#endif
                    for (uint k = 0u; k < PAIRS_PER_THREAD; ++k) {
                        const uint pair = lane + k * TPR;
                        if (PAIRS_SPLIT_EVENLY || pair < DP) {
                            const TILE_QUAD quad = kv_tile[c * KV_STRIDE + pair / 2u];
                            const TILE_PAIR v = (pair & 1u) == 0u ? quad.xy : quad.zw;
#if defined(ARITH_F16)
                            part[k] = fma(ph, v, part[k]);
#else
                            acc[k] += p * v;
#endif
                        }
                    }
#if defined(ARITH_F16)
                    if (c % PV_GROUP == PV_GROUP - 1u || c == BC - 1u) {
                        for (uint k = 0u; k < PAIRS_PER_THREAD; ++k) {
                            acc[k] += tile_scale * vec2(part[k]);
                            part[k] = f16vec2(0.0);
                        }
                    }
#endif
                }
            }
        }
    }

    // The row's sum is the sum of its lanes' partial sums.
    const float row_sum = row_sum_of_lanes(row_local, lane, lane_sum);

    if (!row_valid || !writes_output()) {
        return;
    }
#if defined(SPLIT_KV)
    const uint record = (((b * params.n_head + head) * params.q_len + row) * params.n_splits + split) * (D + 2u);
    for (uint k = 0u; k < PAIRS_PER_THREAD; ++k) {
        const uint pair = lane + k * TPR;
        if (PAIRS_SPLIT_EVENLY || pair < DP) {
            partials[record + 2u * pair] = acc[k].x;
            partials[record + 2u * pair + 1u] = acc[k].y;
        }
    }
    if (lane == 0u) {
        partials[record + D] = row_max;
        partials[record + D + 1u] = row_sum;
    }
#else
    // A row with no unmasked key has row_sum == 0 and outputs zeros.
    const float inv_sum = row_sum > 0.0 ? 1.0 / row_sum : 0.0;
    for (uint k = 0u; k < PAIRS_PER_THREAD; ++k) {
        const uint p = lane + k * TPR;
        if (PAIRS_SPLIT_EVENLY || p < DP) {
            o_data[((first_row + row) * params.n_head + head) * DP + p] = vec2_to_pair(acc[k] * inv_sum);
        }
    }
#endif
}
