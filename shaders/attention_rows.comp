#version 450
// Attention with ALiBi for CPU devices (llvmpipe): no shared memory, no barriers.
//
// Grid: x = query blocks, y = query heads, z = batch * (n_splits / SPLIT_LANES).
// Each invocation owns one query row and one slice of the keys: its scaled Q row and its
// output accumulator live in registers (vec4), K and V are read straight from the storage
// buffers, and the online softmax (running max and sum) is kept per invocation, updated once
// per block of BK keys. On a CPU driver the invocations of a workgroup run as SIMD lanes:
// when SPLIT_LANES == 1 all lanes are rows of the same (batch, head) walking the same keys,
// so every K and V load has one address for the whole workgroup (a scalar load and a
// broadcast instead of a gather), and the key loop's bounds are uniform. With SPLIT_LANES
// > 1 (decoding: few rows, long KV) the lanes of a row take consecutive KV splits instead.
//
// The key loop is the only loop left after unrolling (BK and D are constants), one
// iteration per BK keys; the host keeps kv_split_len / BK under the driver's loop limit.
// Causal: a workgroup stops at the last key its last row can see, and masks per row.
//
// Variants: STORAGE_F16 (fp16 tensors, fp32 arithmetic), KV_F16 (fp16 K and V only: a
// model's fp16 KV cache with fp32 Q and O), KV_QUANT (fp32 Q and O over K and V each fp16,
// q8_0 or q4_0, dequantized as read: kv_quant.glsl), SPLIT_KV (write unnormalized partial rows plus
// (max, sum) for attention_combine.comp instead of the output), PACKED_TABLES (with SPLIT_KV:
// 4 storage buffers, the slope table and key counts read from the partials' binding),
// PAIR_LOADS (D % 4 == 2: a head row does not start on a quad, so the tensors are read and
// written as element pairs, two per quad, and the last quad's upper pair is zero).
//
// Paged batches (VKF_ATTN_FLAG_PAGED): z's batch index is a sequence of the table, whose
// rows are packed in Q and O and whose keys are read through its block table; the query
// blocks past its row count leave at once (the grid is sized for the longest).

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(SUBGROUP_LOADS)
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "interface/attention.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(constant_id = VKF_ATTN_ROWS_SPEC_SPLIT_LANES) const uint SPLIT_LANES = 1; // invocations per row, each a split
layout(constant_id = VKF_ATTN_ROWS_SPEC_BK) const uint BK = 4; // keys per softmax update
layout(constant_id = VKF_ATTN_ROWS_SPEC_R) const uint R = 4;   // query rows per invocation
layout(constant_id = VKF_ATTN_SPEC_D) const uint D = 64;       // head_dim
layout(constant_id = VKF_ATTN_ROWS_SPEC_SG) const uint SG = 8; // SUBGROUP_LOADS: the subgroup size

const uint DP = D / 2u; // element pairs per head row
const uint DQ = (D + 3u) / 4u; // vec4 quads per head row, the last half empty if D % 4 == 2
const uint QPL = (DQ + SG - 1u) / SG; // SUBGROUP_LOADS: quads of a key row each lane loads
const float MASKED = -3.0e38;

#include "attention_io.glsl"

#if defined(PAIR_LOADS)
layout(std430, binding = 0) readonly buffer QBuf { VKF_PAIR q_data[]; };
layout(std430, binding = 1) readonly buffer KBuf { VKF_KV_PAIR k_data[]; };
layout(std430, binding = 2) readonly buffer VBuf { VKF_KV_PAIR v_data[]; };
#elif defined(KV_QUANT)
layout(std430, binding = 0) readonly buffer QBuf { VKF_QUAD q_data[]; };
layout(std430, binding = 1) readonly buffer KBuf { uint k_data[]; };
layout(std430, binding = 2) readonly buffer VBuf { uint v_data[]; };
#define KV_HEAD_DIM D
#include "kv_quant.glsl"
#else
layout(std430, binding = 0) readonly buffer QBuf { VKF_QUAD q_data[]; };
layout(std430, binding = 1) readonly buffer KBuf { VKF_KV_QUAD k_data[]; };
layout(std430, binding = 2) readonly buffer VBuf { VKF_KV_QUAD v_data[]; };
#endif
#if defined(SPLIT_KV)
// Per (batch, head, row, split): D unnormalized output values, then the row max and sum.
layout(std430, binding = 3) writeonly buffer Partials { float partials[]; };
#elif defined(PAIR_LOADS)
layout(std430, binding = 3) writeonly buffer OBuf { VKF_PAIR o_data[]; };
#else
layout(std430, binding = 3) writeonly buffer OBuf { VKF_QUAD o_data[]; };
#endif
#if defined(PACKED_TABLES)
// Devices with 4 storage buffers per shader stage (Vulkan's minimum): the slope table
// (n_head floats) and the key counts (batch uints, or a paged batch's sequence table) follow
// the partial records in binding 3, where the host put them, instead of bindings of their
// own. Always with SPLIT_KV.
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

// Quad dq of the head row that starts at element `base` of a tensor's buffer (its own unit:
// quads, or pairs with PAIR_LOADS).
#if defined(PAIR_LOADS)
const uint ROW_UNITS = DP; // buffer elements per head row
// The upper pair of a row's last quad lies past the row when D % 4 == 2: it reads as zero
// (the branch keeps the load of the next row's, or past the buffer's, pair from happening).
#define VKF_READ_QUAD(data, base, dq)                                          \
    vec2 lo = pair_to_vec2(data[(base) + 2u * (dq)]);                          \
    vec2 hi = vec2(0.0);                                                       \
    if (2u * (dq) + 1u < DP) {                                                 \
        hi = pair_to_vec2(data[(base) + 2u * (dq) + 1u]);                      \
    }                                                                          \
    return vec4(lo, hi);
vec4 q_quad(uint base, uint dq) { VKF_READ_QUAD(q_data, base, dq) }
vec4 k_quad(uint base, uint dq) { VKF_READ_QUAD(k_data, base, dq) }
vec4 v_quad(uint base, uint dq) { VKF_READ_QUAD(v_data, base, dq) }
#define Q_QUAD(base, dq) q_quad(base, dq)
#define K_QUAD(base, dq) k_quad(base, dq)
#define V_QUAD(base, dq) v_quad(base, dq)
#elif defined(KV_QUANT)
// K and V rows are addressed by key row (their sizes differ by format), not by quads.
const uint ROW_UNITS = DQ;
#define Q_QUAD(base, dq) quad_to_vec4(q_data[(base) + (dq)])
#define K_QUAD(key_row, dq) kv_quad(false, key_row, kv_head, dq)
#define V_QUAD(key_row, dq) kv_quad(true, key_row, kv_head, dq)
#else
const uint ROW_UNITS = DQ;
#define Q_QUAD(base, dq) quad_to_vec4(q_data[(base) + (dq)])
#define K_QUAD(base, dq) quad_to_vec4(k_data[(base) + (dq)])
#define V_QUAD(base, dq) quad_to_vec4(v_data[(base) + (dq)])
#endif

#include "alibi.glsl"

void main() {
    const uint invocations_per_split = gl_WorkGroupSize.x / SPLIT_LANES;
    const uint rows_per_group = invocations_per_split * R;
    const uint inv = gl_LocalInvocationID.x / SPLIT_LANES;
    const uint lane_split = gl_LocalInvocationID.x % SPLIT_LANES;
    const uint row0 = gl_WorkGroupID.x * rows_per_group;
    const uint head = gl_WorkGroupID.y;
    const uint split_groups = params.n_splits / SPLIT_LANES; // the host makes n_splits a multiple
    const uint b = gl_WorkGroupID.z / split_groups;
    const uint split = (gl_WorkGroupID.z % split_groups) * SPLIT_LANES + lane_split;
    const uint kv_head = head / (params.n_head / params.n_kv_head);
    const bool causal = (params.flags & VKF_ATTN_FLAG_CAUSAL_MASK) != 0u;

    // This sequence's rows: first_row .. first_row + q_len - 1 of Q and O. The test is uniform
    // over the workgroup, so that the subgroups that share loads stay whole.
    const uint first_row = seq_first_row(b);
    const uint q_len = seq_row_count(b, first_row);
    if (row0 >= q_len) {
        return;
    }

    // Valid keys of this batch; query row i sits at position L - q_len + i. Rows past q_len
    // compute on the last row (so that loads stay in bounds) and store nothing.
    const uint L = seq_key_count(b);
    const uint my_row0 = row0 + inv * R; // this invocation's rows: my_row0 .. my_row0 + R - 1
    int qpos[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) {
        qpos[r] = int(L) - int(q_len) + int(min(my_row0 + r, q_len - 1u));
    }
    const float slope = alibi_slope_of_head(head, L);

    // Keys of this split, within those some row of the group may see: causal, none past the
    // group's last row; with a window W, none before its first row's window (skipped, not
    // masked: decode costs O(W)). Split-KV splits only that range.
    const int first_pos = int(L) - int(q_len) + int(row0);
    const int last_pos = int(L) - int(q_len) + int(min(row0 + rows_per_group, q_len)) - 1;
    const uint range_begin = window_first_key(first_pos);
    uint range_end = window_key_end(last_pos, L);
    if (causal) {
        range_end = min(range_end, uint(max(last_pos + 1, 0)));
    }
    const uint split_len = split_length(params.window == 0u ? L : max(range_end, range_begin) - range_begin, BK);
    const uint key_begin = range_begin + split * split_len;
    const uint key_end = min(range_end, key_begin + split_len);

    vec4 q[R][DQ];
    vec4 acc[R][DQ];
    float row_max[R];
    float row_sum[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint q_base = ((first_row + min(my_row0 + r, q_len - 1u)) * params.n_head + head) * ROW_UNITS;
        [[unroll]] for (uint dq = 0u; dq < DQ; ++dq) {
            q[r][dq] = Q_QUAD(q_base, dq) * params.scale;
            acc[r][dq] = vec4(0.0);
        }
        row_max[r] = MASKED;
        row_sum[r] = 0.0;
    }

#if defined(KV_QUANT)
    const uint key_stride = 1u; // key rows (K_QUAD adds the head)
    const uint kv_base = 0u;
#else
    const uint key_stride = params.n_kv_head * ROW_UNITS; // buffer elements from one key to the next
    const uint kv_base = kv_head * ROW_UNITS;
#endif
    for (uint key0 = key_begin; key0 < key_end; key0 += BK) {
        // Keys past key_end read the last valid key (in bounds) and are masked.
        uint at[BK];
        float s[R][BK];
        [[unroll]] for (uint i = 0u; i < BK; ++i) {
            at[i] = kv_base + kv_row(b, min(key0 + i, key_end - 1u)) * key_stride;
            [[unroll]] for (uint r = 0u; r < R; ++r) {
                s[r][i] = 0.0;
            }
        }
#if defined(SUBGROUP_LOADS)
        // The lanes of a subgroup walk the same keys: each loads a share of every key row
        // once, and the quads are passed around by shuffles instead of loaded by every lane.
        vec4 shared_k[BK][QPL];
        [[unroll]] for (uint i = 0u; i < BK; ++i) {
            [[unroll]] for (uint j = 0u; j < QPL; ++j) {
                shared_k[i][j] = K_QUAD(at[i], min(j * SG + gl_SubgroupInvocationID, DQ - 1u));
            }
        }
#endif
        [[unroll]] for (uint dq = 0u; dq < DQ; ++dq) {
            [[unroll]] for (uint i = 0u; i < BK; ++i) {
#if defined(SUBGROUP_LOADS)
                const vec4 kq = subgroupShuffle(shared_k[i][dq / SG], dq % SG);
#else
                const vec4 kq = K_QUAD(at[i], dq);
#endif
                [[unroll]] for (uint r = 0u; r < R; ++r) {
                    s[r][i] += dot(q[r][dq], kq);
                }
            }
        }
        float p[R][BK];
        float correction[R];
        [[unroll]] for (uint r = 0u; r < R; ++r) {
            float block_max = MASKED;
            [[unroll]] for (uint i = 0u; i < BK; ++i) {
                const uint key = key0 + i;
                const bool visible = key < key_end && (!causal || int(key) <= qpos[r]) && in_window(qpos[r], key);
                s[r][i] = visible ? s[r][i] + alibi_bias(slope, qpos[r], int(key)) : MASKED;
                block_max = max(block_max, s[r][i]);
            }
            // Finite MASKED: a row without any visible key so far keeps correction 1, sum 0.
            const float new_max = max(row_max[r], block_max);
            correction[r] = exp(row_max[r] - new_max);
            float block_sum = 0.0;
            [[unroll]] for (uint i = 0u; i < BK; ++i) {
                p[r][i] = s[r][i] > 0.5 * MASKED ? exp(s[r][i] - new_max) : 0.0;
                block_sum += p[r][i];
            }
            row_sum[r] = row_sum[r] * correction[r] + block_sum;
            row_max[r] = new_max;
        }
#if defined(SUBGROUP_LOADS)
        vec4 shared_v[BK][QPL];
        [[unroll]] for (uint i = 0u; i < BK; ++i) {
            [[unroll]] for (uint j = 0u; j < QPL; ++j) {
                shared_v[i][j] = V_QUAD(at[i], min(j * SG + gl_SubgroupInvocationID, DQ - 1u));
            }
        }
#endif
        [[unroll]] for (uint dq = 0u; dq < DQ; ++dq) {
            vec4 vq[BK];
            [[unroll]] for (uint i = 0u; i < BK; ++i) {
#if defined(SUBGROUP_LOADS)
                vq[i] = subgroupShuffle(shared_v[i][dq / SG], dq % SG);
#else
                vq[i] = V_QUAD(at[i], dq);
#endif
            }
            [[unroll]] for (uint r = 0u; r < R; ++r) {
                vec4 a = acc[r][dq] * correction[r];
                [[unroll]] for (uint i = 0u; i < BK; ++i) {
                    a += p[r][i] * vq[i];
                }
                acc[r][dq] = a;
            }
        }
    }

    [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint row = my_row0 + r;
        if (row < q_len) {
#if defined(SPLIT_KV)
            // Every split writes its record, an empty one (sum 0) included: the combine reads all.
            const uint record =
                (((b * params.n_head + head) * params.q_len + row) * params.n_splits + split) * (D + 2u);
            [[unroll]] for (uint dq = 0u; dq < DQ; ++dq) {
                partials[record + 4u * dq] = acc[r][dq].x;
                partials[record + 4u * dq + 1u] = acc[r][dq].y;
#if defined(PAIR_LOADS)
                if (2u * dq + 1u < DP) { // the padded half of the last quad is not stored
                    partials[record + 4u * dq + 2u] = acc[r][dq].z;
                    partials[record + 4u * dq + 3u] = acc[r][dq].w;
                }
#else
                partials[record + 4u * dq + 2u] = acc[r][dq].z;
                partials[record + 4u * dq + 3u] = acc[r][dq].w;
#endif
            }
            partials[record + D] = row_max[r];
            partials[record + D + 1u] = row_sum[r];
#else
            // A row with no visible key has row_sum == 0 and outputs zeros.
            const float inv_sum = row_sum[r] > 0.0 ? 1.0 / row_sum[r] : 0.0;
            const uint o_base = ((first_row + row) * params.n_head + head) * ROW_UNITS;
            [[unroll]] for (uint dq = 0u; dq < DQ; ++dq) {
#if defined(PAIR_LOADS)
                o_data[o_base + 2u * dq] = vec2_to_pair(acc[r][dq].xy * inv_sum);
                if (2u * dq + 1u < DP) {
                    o_data[o_base + 2u * dq + 1u] = vec2_to_pair(acc[r][dq].zw * inv_sum);
                }
#else
                o_data[o_base + dq] = vec4_to_quad(acc[r][dq] * inv_sum);
#endif
            }
#endif
        }
    }
}
