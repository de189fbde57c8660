#version 450
// Y[m, n] = act(X[m, k] . W[n, k]^T + bias[n]) + R[m, n] with W in ggml's K-quant
// super-blocks (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; kquant_io.glsl) or 32-weight blocks (Q4_1,
// Q5_0, Q5_1), read as the GGUF file stores them: X fp32,
// bias fp32 or fp16 (BIAS_F16), fp32 accumulation. Weights are decoded in registers, never
// written out. Each invocation owns an RM x RN block of Y (decoding: 1 x RN) and walks K a
// super-block at a time; per sub-block it sums the products of X and the small integers,
// then multiplies once by the sub-block's d * scale, and takes off dmin * min times the
// sub-block's sum of X (Q2_K, Q4_K, Q5_K), so the weights d * scale * q - dmin * min are never
// formed. The documented bound (docs/QUANTIZATION.md) is on the float64 product of the
// weights ggml dequantizes.
// The only kernel for K-quants: the planner (host/ops/matmul_quant.cpp) takes it for every
// shape, decoding and prefill, on every device, and refuses the row-dot and int8 paths for
// these formats. Split-K slices are whole super-blocks; with VKF_MATMUL_FLAG_PARTIALS the raw
// sums go to matmul.comp's REDUCE pass. X and W are read by element and byte address, so any
// offset works (w_base counts bytes here). The loops inside a super-block stay loops
// ([[dont_unroll]]): unrolled, llvmpipe took over 30 s to compile each pipeline.
// Bindings are matmul_quant.comp's (interface/matmul_bindings.h, VKF_MATMUL_WEIGHTS_QUANT):
// the host binds the super-blocks at both weight bindings.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "interface/matmul_quant.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#if defined(BIAS_F16)
#define WEIGHTS_F16 // weights_io.glsl's fp16 reads serve the bias, the only unquantized weights
#endif
#include "weights_io.glsl"

#define VKF_MATMUL_WEIGHTS VKF_MATMUL_WEIGHTS_QUANT  // interface/matmul_bindings.h
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer X { float x_data[]; };
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W { uint w_data[]; };
// The same super-blocks at the scales' binding (K-quants keep their scales in the blocks);
// the super-block scales are read through it, so the binding stays in the layout.
layout(std430, binding = VKF_MATMUL_BINDING_SCALES) readonly buffer WHead { uint head_data[]; };
#if defined(NO_EPILOGUE)
layout(std430, binding = VKF_MATMUL_BINDING_PARTIALS(VKF_MATMUL_WEIGHTS)) writeonly buffer Y { float y_data[]; };
#else
layout(std430, binding = VKF_MATMUL_BINDING_BIAS(VKF_MATMUL_WEIGHTS)) readonly buffer Bias { VKF_WEIGHT bias_data[]; };
#if defined(SCATTER)
layout(std430, binding = VKF_MATMUL_BINDING_RESIDUAL(VKF_MATMUL_WEIGHTS)) readonly buffer Slots { uint slot_data[]; };
#else
layout(std430, binding = VKF_MATMUL_BINDING_RESIDUAL(VKF_MATMUL_WEIGHTS)) readonly buffer Residual { float res_data[]; };
#endif
layout(std430, binding = VKF_MATMUL_BINDING_Y(VKF_MATMUL_WEIGHTS)) writeonly buffer Y { float y_data[]; };
#endif

#include "matmul_epilogue.glsl"

#define KQ_DATA w_data
#define KQ_HEAD_DATA head_data
#include "kquant_io.glsl"

layout(constant_id = VKF_MATMUL_QUANT_SPEC_RM) const uint RM = 4; // rows of Y per invocation
layout(constant_id = VKF_MATMUL_QUANT_SPEC_RN) const uint RN = 4; // columns of Y per invocation, a multiple of 4
const uint RQ = RN / 4u;

vec4 load_x4(uint e) {
    return vec4(x_data[e], x_data[e + 1u], x_data[e + 2u], x_data[e + 3u]);
}

void main() {
    const uint col0 = gl_GlobalInvocationID.x * RN;
    const uint row0 = gl_WorkGroupID.y * RM;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint sb_begin = k_begin / KQ_BLOCK_WEIGHTS;
    const uint sb_end = min(params.k, k_begin + params.k_split) / KQ_BLOCK_WEIGHTS;
    const uint row_bytes = params.k / KQ_BLOCK_WEIGHTS * KQ_BLOCK_BYTES;
    // Rows and columns past the edges read the last one (in bounds) and are never stored.
    uint w_row[RN];
    [[unroll]] for (uint j = 0u; j < RN; ++j) {
        w_row[j] = params.w_base + min(col0 + j, params.n - 1u) * row_bytes;
    }
    uint x_row[RM];
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        x_row[i] = params.x_base + min(row0 + i, params.m - 1u) * params.k;
    }
    float acc[RM][RN];
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            acc[i][j] = 0.0;
        }
    }
    for (uint sb = sb_begin; sb < sb_end; ++sb) {
        const uint e0 = KQ_BLOCK_WEIGHTS * sb; // the block's first element along k
#if defined(KQ_LEGACY)
        // One block of 32: weight q * d + m (Q5_0: (q - 16) * d, so m = -16 d, exact), summed
        // as d * sum(x q) + m * sum(x). Chunk c: elements 4c .. 4c + 3 in the low nibbles of
        // qs[4c ..], 16 + 4c .. in the high; Q5_*'s fifth bit of element e is bit e of qh.
        float d[RN], mn[RN];
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            const vec2 dm = unpackHalf2x16(kq_head_word(w_row[j] + sb * KQ_BLOCK_BYTES));
            d[j] = dm.x;
#if defined(Q5_0)
            mn[j] = -16.0 * dm.x;
#else
            mn[j] = dm.y;
#endif
        }
        float part[RM][RN], xs[RM];
        [[unroll]] for (uint i = 0u; i < RM; ++i) {
            xs[i] = 0.0;
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                part[i][j] = 0.0;
            }
        }
        [[dont_unroll]] for (uint c = 0u; c < 4u; ++c) {
            vec4 q_lo[RN], q_hi[RN];
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                const uint b = w_row[j] + sb * KQ_BLOCK_BYTES;
                const ivec4 qs = kq_bytes(kq_word(b + KQ_QS_AT + 4u * c));
#if defined(Q4_1)
                q_lo[j] = vec4(qs & 0xF);
                q_hi[j] = vec4(qs >> 4);
#else
                const uint qh = kq_word(b + KQ_QH_AT);
                const ivec4 h_lo = (ivec4(qh >> (4u * c)) >> ivec4(0, 1, 2, 3)) & 1;
                const ivec4 h_hi = (ivec4(qh >> (16u + 4u * c)) >> ivec4(0, 1, 2, 3)) & 1;
                q_lo[j] = vec4((qs & 0xF) | (h_lo << 4));
                q_hi[j] = vec4((qs >> 4) | (h_hi << 4));
#endif
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                const vec4 xl = load_x4(x_row[i] + e0 + 4u * c);
                const vec4 xh = load_x4(x_row[i] + e0 + 16u + 4u * c);
                xs[i] += dot(xl, vec4(1.0)) + dot(xh, vec4(1.0));
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    part[i][j] += dot(xl, q_lo[j]) + dot(xh, q_hi[j]);
                }
            }
        }
        [[unroll]] for (uint i = 0u; i < RM; ++i) {
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                acc[i][j] += d[j] * part[i][j] + mn[j] * xs[i];
            }
        }
#elif defined(Q4_K) || defined(Q5_K)
        vec4 dl[RN][2], ml[RN][2]; // [0]: sub-blocks 0-3, [1]: 4-7
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            kq_multipliers(w_row[j] + sb * KQ_BLOCK_BYTES, dl[j][0], dl[j][1], ml[j][0], ml[j][1]);
        }
        // Pair p: sub-block 2p in the low nibbles of qs[32p .. 32p + 31], 2p + 1 in the high.
        [[dont_unroll]] for (uint p = 0u; p < 4u; ++p) {
            float d_lo[RM][RN], d_hi[RM][RN], x_lo[RM], x_hi[RM];
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                x_lo[i] = 0.0;
                x_hi[i] = 0.0;
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    d_lo[i][j] = 0.0;
                    d_hi[i][j] = 0.0;
                }
            }
            [[dont_unroll]] for (uint c = 0u; c < 8u; ++c) {
                vec4 q_lo[RN], q_hi[RN];
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    const uint b = w_row[j] + sb * KQ_BLOCK_BYTES;
#if defined(Q4_K)
                    const ivec4 qs = kq_bytes(kq_word(b + 16u + 32u * p + 4u * c));
                    q_lo[j] = vec4(qs & 0xF);
                    q_hi[j] = vec4(qs >> 4);
#else
                    const ivec4 qs = kq_bytes(kq_word(b + 48u + 32u * p + 4u * c));
                    const ivec4 qh = kq_bytes(kq_word(b + 16u + 4u * c)); // fifth bits: bit j of sub-block j
                    q_lo[j] = vec4((qs & 0xF) | (((qh >> (2u * p)) & 1) << 4));
                    q_hi[j] = vec4((qs >> 4) | (((qh >> (2u * p + 1u)) & 1) << 4));
#endif
                }
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    const vec4 xl = load_x4(x_row[i] + e0 + 64u * p + 4u * c);
                    const vec4 xh = load_x4(x_row[i] + e0 + 64u * p + 32u + 4u * c);
                    x_lo[i] += dot(xl, vec4(1.0));
                    x_hi[i] += dot(xh, vec4(1.0));
                    [[unroll]] for (uint j = 0u; j < RN; ++j) {
                        d_lo[i][j] += dot(xl, q_lo[j]);
                        d_hi[i][j] += dot(xh, q_hi[j]);
                    }
                }
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    const uint lo = 2u * p, hi = 2u * p + 1u;
                    acc[i][j] += (dl[j][lo / 4u][lo % 4u] * d_lo[i][j] - ml[j][lo / 4u][lo % 4u] * x_lo[i]) +
                                 (dl[j][hi / 4u][hi % 4u] * d_hi[i][j] - ml[j][hi / 4u][hi % 4u] * x_hi[i]);
                }
            }
        }
#elif defined(Q2_K) || defined(Q3_K)
        // 16 sub-blocks of 16. Half h (128 weights) uses qs[32h .. 32h + 31]; its group g of 32
        // weights the 2 bits at 2g of qs[32h + l] (Q3_K: less 4 unless bit 4h + g of
        // hmask[l] is set); sub-block 8h + 2g + l / 16.
        float dl[RN][16], ml[RN][16];
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            kq_small_multipliers(w_row[j] + sb * KQ_BLOCK_BYTES, dl[j], ml[j]);
        }
        [[dont_unroll]] for (uint h = 0u; h < 2u; ++h) {
            [[dont_unroll]] for (uint g = 0u; g < 4u; ++g) {
                float part[RM][RN][2], xs[RM][2];
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    xs[i][0] = 0.0;
                    xs[i][1] = 0.0;
                    [[unroll]] for (uint j = 0u; j < RN; ++j) {
                        part[i][j][0] = 0.0;
                        part[i][j][1] = 0.0;
                    }
                }
                [[dont_unroll]] for (uint c = 0u; c < 8u; ++c) {
                    vec4 q[RN];
                    [[unroll]] for (uint j = 0u; j < RN; ++j) {
                        const uint b = w_row[j] + sb * KQ_BLOCK_BYTES;
#if defined(Q2_K)
                        q[j] = vec4((kq_bytes(kq_word(b + 16u + 32u * h + 4u * c)) >> (2u * g)) & 3);
#else
                        const ivec4 q2 = (kq_bytes(kq_word(b + 32u + 32u * h + 4u * c)) >> (2u * g)) & 3;
                        const ivec4 hbit = (kq_bytes(kq_word(b + 4u * c)) >> (4u * h + g)) & 1;
                        q[j] = vec4(q2 - 4 + 4 * hbit);
#endif
                    }
                    [[unroll]] for (uint i = 0u; i < RM; ++i) {
                        const vec4 x = load_x4(x_row[i] + e0 + 128u * h + 32u * g + 4u * c);
                        xs[i][c / 4u] += dot(x, vec4(1.0));
                        [[unroll]] for (uint j = 0u; j < RN; ++j) {
                            part[i][j][c / 4u] += dot(x, q[j]);
                        }
                    }
                }
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    [[unroll]] for (uint j = 0u; j < RN; ++j) {
                        const uint t = 8u * h + 2u * g;
                        acc[i][j] += (dl[j][t] * part[i][j][0] - ml[j][t] * xs[i][0]) +
                                     (dl[j][t + 1u] * part[i][j][1] - ml[j][t + 1u] * xs[i][1]);
                    }
                }
            }
        }
#else // Q6_K
        // 16 sub-blocks of 16, each d * scale (int8) times its values q - 32 (6 bits: ql's
        // nibble and 2 bits of qh). Half h (128 weights) uses ql[64h ..] and qh[32h ..]; its
        // group g of 32 weights the low (g < 2) or high nibbles of ql[64h + 32 (g % 2) + l] and
        // bits 2g, 2g + 1 of qh[32h + l].
        float dsc[RN][16];
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            const uint b = w_row[j] + sb * KQ_BLOCK_BYTES;
            const float d = unpackHalf2x16(kq_head_word(b + 208u)).x;
            [[unroll]] for (uint t = 0u; t < 16u; t += 4u) {
                const ivec4 sc = (ivec4(kq_head_word(b + 192u + t)) << ivec4(24, 16, 8, 0)) >> 24; // int8
                [[unroll]] for (uint u = 0u; u < 4u; ++u) {
                    dsc[j][t + u] = d * float(sc[u]);
                }
            }
        }
        [[dont_unroll]] for (uint h = 0u; h < 2u; ++h) {
            [[dont_unroll]] for (uint g = 0u; g < 4u; ++g) {
                float part[RM][RN][2];
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    [[unroll]] for (uint j = 0u; j < RN; ++j) {
                        part[i][j][0] = 0.0;
                        part[i][j][1] = 0.0;
                    }
                }
                // The 8 words of ql and of qh are read as 9 words each from the word at or
                // below them (a 210-byte Q6_K block may start on any byte), the last within the block.
                uint ql_at[RN], qh_at[RN], ql_prev[RN], qh_prev[RN], shift[RN];
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    const uint b = w_row[j] + sb * KQ_BLOCK_BYTES;
                    shift[j] = 8u * (b & 3u);
                    ql_at[j] = (b + 64u * h + 32u * (g % 2u)) >> 2u;
                    qh_at[j] = (b + 128u + 32u * h) >> 2u;
                    ql_prev[j] = w_data[ql_at[j]];
                    qh_prev[j] = w_data[qh_at[j]];
                }
                [[dont_unroll]] for (uint c = 0u; c < 8u; ++c) {
                    vec4 q[RN];
                    [[unroll]] for (uint j = 0u; j < RN; ++j) {
                        const uint ql_next = w_data[ql_at[j] + c + 1u];
                        const uint qh_next = w_data[qh_at[j] + c + 1u];
                        const ivec4 ql = kq_bytes(kq_join(ql_prev[j], ql_next, shift[j]));
                        const ivec4 qh = kq_bytes(kq_join(qh_prev[j], qh_next, shift[j]));
                        ql_prev[j] = ql_next;
                        qh_prev[j] = qh_next;
                        q[j] = vec4((((ql >> (4u * (g / 2u))) & 0xF) | (((qh >> (2u * g)) & 3) << 4)) - 32);
                    }
                    [[unroll]] for (uint i = 0u; i < RM; ++i) {
                        const vec4 x = load_x4(x_row[i] + e0 + 128u * h + 32u * g + 4u * c);
                        [[unroll]] for (uint j = 0u; j < RN; ++j) {
                            part[i][j][c / 4u] += dot(x, q[j]);
                        }
                    }
                }
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    [[unroll]] for (uint j = 0u; j < RN; ++j) {
                        const uint t = 8u * h + 2u * g;
                        acc[i][j] += dsc[j][t] * part[i][j][0] + dsc[j][t + 1u] * part[i][j][1];
                    }
                }
            }
        }
#endif
    }
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint q = 0u; q < RQ; ++q) {
            store_quad(row0 + i, col0 + 4u * q,
                       vec4(acc[i][4u * q], acc[i][4u * q + 1u], acc[i][4u * q + 2u], acc[i][4u * q + 3u]));
        }
    }
}
