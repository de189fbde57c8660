#version 450
// Y[m, n] = act(X[m, k] . W[n, k]^T + bias[n]) + R[m, n] with W block-quantized (Q8_0 or
// Q4_0, quant_io.glsl): X fp32, bias fp32 or fp16 (BIAS_F16), fp32 accumulation. Weights
// are decoded in registers, never written out: each block's products with X are summed
// first and multiplied by the block's scale once, and q4_0's offset of 8 is taken off as
// 8 * (the block's sum of X), once per block and row of X.
// A block is read as one (q4_0) or two (q8_0) 16-byte vectors, X as 16-byte vectors; with
// WIDE64 (shaderInt64) as vectors of two 64-bit components. On llvmpipe every component
// loaded costs a bounds-checked scalar load per lane (see matmul.comp's ROWDOT), so this
// halves the cost of every read.
// Kernel variants (one per define):
//   ROWDOT    few rows of X (decoding), needs subgroup arithmetic: the lanes of a subgroup
//             take blocks of the same RN rows of W in turn (lane l: blocks l, l + lanes, ...),
//             each lane reading its block of X once for all RN rows and RM rows of X, and
//             subgroupAdd sums the lanes at the end. A workgroup owns RM rows and RN * RG
//             columns of Y (its subgroups take groups of RN columns in turn).
//   BLOCKED   no shared memory and no subgroup operations: each invocation owns an RM x RN
//             block of Y and walks K a block at a time, decoding RN blocks of W and reading
//             RM of X. Prefill, and decoding on devices without subgroup arithmetic.
// Grid: x = column tiles (RN * RG columns for ROWDOT, RN * workgroup size for BLOCKED),
// y = row tiles, z = K slices (split-K, slices of whole blocks). With
// VKF_MATMUL_FLAG_PARTIALS the raw sums go to P for matmul.comp's REDUCE pass, which adds
// the slices and applies the epilogue.
// Bindings are placed as in matmul.comp (the host binds from an aligned offset at or below a
// tensor's first element; *_base say where it sits): w_base counts 32-bit words of the
// values plane, s_base fp16 scales.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(ROWDOT)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#if defined(WIDE64)
#extension GL_ARB_gpu_shader_int64 : require
#endif

#include "interface/matmul_quant.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#if defined(BIAS_F16)
#define WEIGHTS_F16 // weights_io.glsl's fp16 reads serve the bias, the only unquantized weights
#endif
#include "weights_io.glsl"
#include "quant_io.glsl"

layout(std430, binding = 0) readonly buffer X { float x_data[]; };
layout(std430, binding = 1) readonly buffer W { uint w_data[]; };
layout(std430, binding = 2) readonly buffer Scales { uint s_data[]; };
layout(std430, binding = 3) readonly buffer Bias { VKF_WEIGHT bias_data[]; };
layout(std430, binding = 4) readonly buffer Residual { float res_data[]; };
layout(std430, binding = 5) writeonly buffer Y { float y_data[]; };
// Vector views of X and W (the same bindings), read only with VKF_MATMUL_QUANT_FLAG_VEC.
#if defined(WIDE64)
layout(std430, binding = 0) readonly buffer X64 { u64vec2 x64_data[]; }; // 4 floats
layout(std430, binding = 1) readonly buffer W64 { u64vec2 w64_data[]; }; // 4 words
#else
layout(std430, binding = 0) readonly buffer X4 { vec4 x4_data[]; };
layout(std430, binding = 1) readonly buffer W4 { uvec4 w4_data[]; };
#endif

#include "matmul_epilogue.glsl"

// X[e .. e + 3]; e % 4 == 0 when `vec`.
vec4 load_x4(uint e, bool vec) {
    if (vec) {
#if defined(WIDE64)
        const u64vec2 v = x64_data[e >> 2u];
        return vec4(uintBitsToFloat(unpackUint2x32(v.x)), uintBitsToFloat(unpackUint2x32(v.y)));
#else
        return x4_data[e >> 2u];
#endif
    }
    return vec4(x_data[e], x_data[e + 1u], x_data[e + 2u], x_data[e + 3u]);
}

// Words i .. i + 3 of the values plane; i % 4 == 0 when `vec`.
uvec4 load_w4(uint i, bool vec) {
    if (vec) {
#if defined(WIDE64)
        const u64vec2 v = w64_data[i >> 2u];
        return uvec4(unpackUint2x32(v.x), unpackUint2x32(v.y));
#else
        return w4_data[i >> 2u];
#endif
    }
    return uvec4(w_data[i], w_data[i + 1u], w_data[i + 2u], w_data[i + 3u]);
}

// A block as the kernels hold it: `a` its first four words and `b` the next four (q8_0
// only). Word c of `a` (q8_0 and q4_0 alike) holds elements 4c .. 4c + 3 of the block and
// the elements 16 + 4c .. 16 + 4c + 3 are in word c of `b` (q8_0) or in the high nibbles of
// word c of `a` (q4_0); X is held in the same order, lo[c] and hi[c].
vec4 decode_lo(uvec4 a, uvec4 b, uint c) {
#if defined(Q8_0)
    return q8_decode(a[c]);
#else
    return q4_decode_lo(a[c]);
#endif
}
vec4 decode_hi(uvec4 a, uvec4 b, uint c) {
#if defined(Q8_0)
    return q8_decode(b[c]);
#else
    return q4_decode_hi(a[c]);
#endif
}

void load_block(uint word, bool vec, out uvec4 a, out uvec4 b) {
    a = load_w4(word, vec);
#if defined(Q8_0)
    b = load_w4(word + 4u, vec);
#else
    b = uvec4(0u);
#endif
}

#if defined(Q8_0)
const float VALUE_OFFSET = 0.0;
#else
const float VALUE_OFFSET = 8.0;
#endif

#if defined(ROWDOT)

layout(constant_id = VKF_MATMUL_QUANT_SPEC_RM) const uint RM = 1; // rows of Y per workgroup
layout(constant_id = VKF_MATMUL_QUANT_SPEC_RN) const uint RN = 8; // columns of Y per subgroup pass
layout(constant_id = VKF_MATMUL_QUANT_SPEC_RG) const uint RG = 4; // groups of RN columns per workgroup

void main() {
    const uint lane = gl_SubgroupInvocationID;
    const uint lanes = gl_SubgroupSize;
    const uint row0 = gl_WorkGroupID.y * RM;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint b_begin = k_begin / 32u;
    const uint b_end = min(params.k, k_begin + params.k_split) / 32u;
    const uint row_words = params.k / 32u * QUANT_BLOCK_WORDS;
    const uint row_scales = params.k / 32u;
    const bool vec = (params.flags & VKF_MATMUL_QUANT_FLAG_VEC) != 0u;
    // Rows and columns past the edges read the last one (in bounds) and are never stored.
    uint x_row[RM];
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        x_row[i] = params.x_base + min(row0 + i, params.m - 1u) * params.k;
    }
    // Subgroup-uniform loop: all lanes of a subgroup take the same groups.
    for (uint g = gl_SubgroupID; g < RG; g += gl_NumSubgroups) {
        const uint col0 = (gl_WorkGroupID.x * RG + g) * RN;
        if (col0 >= params.n) {
            break;
        }
        uint w_row[RN], s_row[RN];
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            const uint col = min(col0 + j, params.n - 1u);
            w_row[j] = params.w_base + col * row_words;
            s_row[j] = params.s_base + col * row_scales;
        }
        float acc[RM][RN];
        [[unroll]] for (uint i = 0u; i < RM; ++i) {
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                acc[i][j] = 0.0;
            }
        }
        for (uint blk = b_begin + lane; blk < b_end; blk += lanes) {
            // The block of X, read once for all RN rows of W.
            vec4 x_lo[RM][4], x_hi[RM][4];
            float x_sum[RM];
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                const uint e = x_row[i] + 32u * blk;
                vec4 s = vec4(0.0);
                [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                    x_lo[i][c] = load_x4(e + 4u * c, vec);
                    x_hi[i][c] = load_x4(e + 16u + 4u * c, vec);
                    s += x_lo[i][c] + x_hi[i][c];
                }
                x_sum[i] = VALUE_OFFSET * dot(s, vec4(1.0));
            }
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                uvec4 a, b;
                load_block(w_row[j] + blk * QUANT_BLOCK_WORDS, vec, a, b);
                const float scale = VKF_LOAD_SCALE(s_data, s_row[j] + blk);
                vec4 lo[4], hi[4];
                [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                    lo[c] = decode_lo(a, b, c);
                    hi[c] = decode_hi(a, b, c);
                }
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    const float d = (dot(x_lo[i][0], lo[0]) + dot(x_hi[i][0], hi[0])) +
                                    (dot(x_lo[i][1], lo[1]) + dot(x_hi[i][1], hi[1])) +
                                    (dot(x_lo[i][2], lo[2]) + dot(x_hi[i][2], hi[2])) +
                                    (dot(x_lo[i][3], lo[3]) + dot(x_hi[i][3], hi[3]));
                    acc[i][j] += scale * (d - x_sum[i]);
                }
            }
        }
        [[unroll]] for (uint i = 0u; i < RM; ++i) {
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                const float sum = subgroupAdd(acc[i][j]);
                if (lane == 0u && row0 + i < params.m && col0 + j < params.n) {
                    store(row0 + i, col0 + j, sum);
                }
            }
        }
    }
}

#elif defined(BLOCKED)

layout(constant_id = VKF_MATMUL_QUANT_SPEC_RM) const uint RM = 4; // rows of Y per invocation
layout(constant_id = VKF_MATMUL_QUANT_SPEC_RN) const uint RN = 8; // columns of Y per invocation, a multiple of 4
const uint RQ = RN / 4u;

void main() {
    const uint col0 = gl_GlobalInvocationID.x * RN;
    const uint row0 = gl_WorkGroupID.y * RM;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint b_begin = k_begin / 32u;
    const uint b_end = min(params.k, k_begin + params.k_split) / 32u;
    const uint row_words = params.k / 32u * QUANT_BLOCK_WORDS;
    const uint row_scales = params.k / 32u;
    const bool vec = (params.flags & VKF_MATMUL_QUANT_FLAG_VEC) != 0u;
    // Rows and columns past the edges read the last one (in bounds) and are never stored.
    uint w_row[RN], s_row[RN];
    [[unroll]] for (uint j = 0u; j < RN; ++j) {
        const uint col = min(col0 + j, params.n - 1u);
        w_row[j] = params.w_base + col * row_words;
        s_row[j] = params.s_base + col * row_scales;
    }
    uint x_row[RM];
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        x_row[i] = params.x_base + min(row0 + i, params.m - 1u) * params.k;
    }
    vec4 acc[RM][RQ];
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint q = 0u; q < RQ; ++q) {
            acc[i][q] = vec4(0.0);
        }
    }
    // The constant-count loops are unrolled: the block loop is the only loop left.
    for (uint blk = b_begin; blk < b_end; ++blk) {
        uvec4 a[RN], b[RN];
        vec4 scale[RQ];
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            load_block(w_row[j] + blk * QUANT_BLOCK_WORDS, vec, a[j], b[j]);
            scale[j / 4u][j % 4u] = VKF_LOAD_SCALE(s_data, s_row[j] + blk);
        }
        vec4 d[RM][RQ]; // sums of x * value over the block
        vec4 x_sum[RM];
        [[unroll]] for (uint i = 0u; i < RM; ++i) {
            x_sum[i] = vec4(0.0);
            [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                d[i][q] = vec4(0.0);
            }
        }
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            vec4 lo[RN], hi[RN];
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                lo[j] = decode_lo(a[j], b[j], c);
                hi[j] = decode_hi(a[j], b[j], c);
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                const uint e = x_row[i] + 32u * blk + 4u * c;
                const vec4 xl = load_x4(e, vec);
                const vec4 xh = load_x4(e + 16u, vec);
                x_sum[i] += xl + xh;
                [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                    d[i][q] += vec4(dot(xl, lo[4u * q]) + dot(xh, hi[4u * q]),
                                    dot(xl, lo[4u * q + 1u]) + dot(xh, hi[4u * q + 1u]),
                                    dot(xl, lo[4u * q + 2u]) + dot(xh, hi[4u * q + 2u]),
                                    dot(xl, lo[4u * q + 3u]) + dot(xh, hi[4u * q + 3u]));
                }
            }
        }
        [[unroll]] for (uint i = 0u; i < RM; ++i) {
            const float offset = VALUE_OFFSET * dot(x_sum[i], vec4(1.0));
            [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                acc[i][q] += scale[q] * (d[i][q] - offset);
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint q = 0u; q < RQ; ++q) {
            store_quad(row0 + i, col0 + 4u * q, acc[i][q]);
        }
    }
}

#else
#error "matmul_quant.comp needs ROWDOT or BLOCKED"
#endif
