#version 450
// Y[m, n] = act(X[m, k] . W[n, k]^T + bias[n]) + R[m, n] with W block-quantized (Q8_0 or
// Q4_0, quant_io.glsl): X fp32, bias fp32 or fp16 (BIAS_F16), fp32 accumulation. Weights
// are decoded in registers, never written out: each block's products with X are summed
// first and multiplied by the block's scale once, and q4_0's offset of 8 is taken off as
// 8 * (the block's sum of X), once per block and row of X.
// A block is read as one (q4_0) or two (q8_0) 16-byte vectors, X as 16-byte vectors; with
// WIDE64 (shaderInt64) as vectors of two 64-bit components. On llvmpipe every component
// loaded costs a bounds-checked scalar load per lane (see matmul.comp's ROWDOT), so this
// halves the cost of every read. SCALAR reads words and floats one at a time, for rows that
// do not start on 16 bytes: a variant of its own, not a run-time branch, because llvmpipe
// runs both sides of every branch (masked) and a loop it skips still costs an iteration.
// Kernel variants (one per define):
//   ROWDOT    GPUs, few rows of X (decoding), needs subgroup arithmetic: the lanes of a
//             subgroup take blocks of the same RN rows of W in turn (lane l: blocks l,
//             l + lanes, ...), each lane reading its block of X once for all RN rows of W and
//             RM rows of X, and subgroupAdd sums the lanes at the end. A workgroup owns RM
//             rows and RN * RG columns of Y (its subgroups take groups of RN columns in turn).
//   BLOCKED   no shared memory and no subgroup operations: each invocation owns an RM x RN
//             block of Y and walks K BG blocks a step, decoding RN blocks of W and reading RM
//             of X. Prefill, decoding on devices without subgroup arithmetic, and every shape
//             on CPU devices: there all invocations of a workgroup read the same X, which
//             llvmpipe loads once for all lanes (the row-dot kernel's lanes read different
//             blocks of X, a load per lane), so it decodes 1.4-2.4x faster on lavapipe.
//   INTDOT    the blocked kernel on X quantized to int8 by matmul_quant_x.comp (binding 0
//             then holds its words and block scales, interface/matmul_quant_x.h): int32 dot
//             products of packed 4x8-bit words per block (OpSDot, SPV_KHR_integer_dot_product;
//             needs shaderIntegerDotProduct), times scale_w * scale_x once per block, fp32
//             across blocks. Changes the numerics (X rounded to int8): opt-in only.
//   F16_MATH  (ROWDOT and BLOCKED, not INTDOT) fp16 arithmetic, needs shaderFloat16: X and the
//             decoded values in fp16 (values exact, scaled into [-1, 1] by a power of two),
//             each 8 products of a block summed in fp16 and added in fp32; the block scale
//             and the sum across blocks fp32 (matmul_quant_math.glsl).
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
#if defined(INTDOT)
#extension GL_EXT_spirv_intrinsics : require
#endif
#if defined(F16_MATH)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

#include "interface/matmul_quant.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#if defined(BIAS_F16)
#define WEIGHTS_F16 // weights_io.glsl's fp16 reads serve the bias, the only unquantized weights
#endif
#include "weights_io.glsl"
#include "quant_io.glsl"

#define VKF_MATMUL_WEIGHTS VKF_MATMUL_WEIGHTS_QUANT  // interface/matmul_bindings.h
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer X { float x_data[]; };
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W { uint w_data[]; };
layout(std430, binding = VKF_MATMUL_BINDING_SCALES) readonly buffer Scales { uint s_data[]; };
#if defined(WIDE64)
layout(std430, binding = VKF_MATMUL_BINDING_SCALES) readonly buffer Scales4 { uint64_t s4_data[]; }; // 4 scales
#else
layout(std430, binding = VKF_MATMUL_BINDING_SCALES) readonly buffer Scales4 { uvec2 s4_data[]; }; // 4 scales
#endif
#if defined(NO_EPILOGUE)
// As matmul.comp's NO_EPILOGUE: the raw sums only (4 storage buffers), the REDUCE pass of
// matmul.comp applies the epilogue.
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
// Vector views of X and W (the same bindings), read unless SCALAR.
#if defined(SCALAR)
#elif defined(WIDE64)
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer X64 { u64vec2 x64_data[]; }; // 4 floats
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W64 { u64vec2 w64_data[]; }; // 4 words
#else
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer X4 { vec4 x4_data[]; };
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W4 { uvec4 w4_data[]; };
#endif

#if defined(INTDOT)
// X quantized (matmul_quant_x.comp): words of 4 int8 values, then 2 words per block (scale, sum).
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer XQ { uint xq_data[]; };
#if defined(SCALAR)
#elif defined(WIDE64)
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer XQ64 { u64vec2 xq64_data[]; }; // 4 words
#else
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer XQ4 { uvec4 xq4_data[]; };
#endif
// OpSDot (4450) of two words of 4 signed 8-bit values (PackedVectorFormat4x8Bit = 0), with
// capabilities DotProductInput4x8BitPacked (6019) and DotProduct (6018): glslang 12 has no
// GL_EXT_integer_dot_product.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int fmt);
#endif

#include "matmul_epilogue.glsl"

// Blocks a step takes (of a lane in ROWDOT, of the loop in BLOCKED): 1, 2 or 4. Their
// scales are read together, one component of the scales plane, where the host sees that
// the row's scales line up (k / 32 and s_base multiples of BG). Each scale read costs as
// much as a component of a block on llvmpipe: one per block was a third of q4_0's time.
layout(constant_id = VKF_MATMUL_QUANT_SPEC_BG) const uint BG = 1;

// Scales s .. s + BG - 1 (the rest 0); s % BG == 0.
vec4 load_scales(uint s) {
    if (BG == 4u) {
#if defined(WIDE64)
        const uvec2 u = unpackUint2x32(s4_data[s >> 2u]);
#else
        const uvec2 u = s4_data[s >> 2u];
#endif
        return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
    }
    if (BG == 2u) {
        return vec4(unpackHalf2x16(s_data[s >> 1u]), 0.0, 0.0);
    }
    return vec4(VKF_LOAD_SCALE(s_data, s), 0.0, 0.0, 0.0);
}

// X[e .. e + 3]; e % 4 == 0 unless SCALAR.
vec4 load_x4(uint e) {
#if defined(SCALAR)
    return vec4(x_data[e], x_data[e + 1u], x_data[e + 2u], x_data[e + 3u]);
#elif defined(WIDE64)
    const u64vec2 v = x64_data[e >> 2u];
    return vec4(uintBitsToFloat(unpackUint2x32(v.x)), uintBitsToFloat(unpackUint2x32(v.y)));
#else
    return x4_data[e >> 2u];
#endif
}

// Words i .. i + 3 of the values plane; i % 4 == 0 unless SCALAR.
uvec4 load_w4(uint i) {
#if defined(SCALAR)
    return uvec4(w_data[i], w_data[i + 1u], w_data[i + 2u], w_data[i + 3u]);
#elif defined(WIDE64)
    const u64vec2 v = w64_data[i >> 2u];
    return uvec4(unpackUint2x32(v.x), unpackUint2x32(v.y));
#else
    return w4_data[i >> 2u];
#endif
}

#if defined(INTDOT)
// Words i .. i + 3 of quantized X; i % 4 == 0 unless SCALAR.
uvec4 load_xq4(uint i) {
#if defined(SCALAR)
    return uvec4(xq_data[i], xq_data[i + 1u], xq_data[i + 2u], xq_data[i + 3u]);
#elif defined(WIDE64)
    const u64vec2 v = xq64_data[i >> 2u];
    return uvec4(unpackUint2x32(v.x), unpackUint2x32(v.y));
#else
    return xq4_data[i >> 2u];
#endif
}

// The integer dot product of a block of W (a, b as load_block holds it) with a block of
// quantized X (xl: words 0-3, xh: words 4-7), q4_0's nibbles still offset by 8.
int block_idot(uvec4 a, uvec4 b, uvec4 xl, uvec4 xh) {
    int s = 0;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
#if defined(Q8_0)
        s += sdot4x8(a[c], xl[c], 0) + sdot4x8(b[c], xh[c], 0);
#else
        // Nibbles 0..15 are non-negative int8 values as they stand.
        s += sdot4x8(a[c] & 0x0F0F0F0Fu, xl[c], 0) + sdot4x8((a[c] >> 4u) & 0x0F0F0F0Fu, xh[c], 0);
#endif
    }
    return s;
}
#endif

#include "matmul_quant_math.glsl"

#if defined(ROWDOT)

layout(constant_id = VKF_MATMUL_QUANT_SPEC_RM) const uint RM = 1; // rows of Y per workgroup
layout(constant_id = VKF_MATMUL_QUANT_SPEC_RN) const uint RN = 8; // columns of Y per subgroup pass
layout(constant_id = VKF_MATMUL_QUANT_SPEC_RG) const uint RG = 4; // groups of RN columns per workgroup

void rowdot() {
    const uint lane = gl_SubgroupInvocationID;
    const uint lanes = gl_SubgroupSize;
    const uint row0 = gl_WorkGroupID.y * RM;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint b_begin = k_begin / 32u;
    const uint b_end = min(params.k, k_begin + params.k_split) / 32u;
    const uint row_words = params.k / 32u * QUANT_BLOCK_WORDS;
    const uint row_scales = params.k / 32u;
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
        // Lane l takes steps l, l + lanes, ... of BG blocks each.
        for (uint step = b_begin / BG + lane; step < b_end / BG; step += lanes) {
            vec4 scales[RN];
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                scales[j] = load_scales(s_row[j] + step * BG);
            }
            [[unroll]] for (uint u = 0u; u < BG; ++u) {
                const uint blk = step * BG + u;
                // The block of X, read once for all RN rows of W.
                QVEC x_lo[RM][4], x_hi[RM][4];
                float x_offset[RM]; // q4_0: 8 * the block's sum of X
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    const uint e = x_row[i] + 32u * blk;
                    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                        x_lo[i][c] = QVEC(load_x4(e + 4u * c));
                        x_hi[i][c] = QVEC(load_x4(e + 16u + 4u * c));
                    }
                    x_offset[i] = block_offset(x_lo[i], x_hi[i]);
                }
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    uvec4 a, b;
                    load_block(w_row[j] + blk * QUANT_BLOCK_WORDS, a, b);
                    QVEC lo[4], hi[4];
                    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                        lo[c] = decode_lo(a, b, c);
                        hi[c] = decode_hi(a, b, c);
                    }
                    [[unroll]] for (uint i = 0u; i < RM; ++i) {
                        const float d = (QSUM8(x_lo[i][0], lo[0], x_hi[i][0], hi[0]) +
                                         QSUM8(x_lo[i][1], lo[1], x_hi[i][1], hi[1])) +
                                        (QSUM8(x_lo[i][2], lo[2], x_hi[i][2], hi[2]) +
                                         QSUM8(x_lo[i][3], lo[3], x_hi[i][3], hi[3]));
                        acc[i][j] += QUANT_SCALE(scales[j][u]) * (d - x_offset[i]);
                    }
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

void blocked() {
    const uint col0 = gl_GlobalInvocationID.x * RN;
    const uint row0 = gl_WorkGroupID.y * RM;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint b_begin = k_begin / 32u;
    const uint b_end = min(params.k, k_begin + params.k_split) / 32u;
    const uint row_words = params.k / 32u * QUANT_BLOCK_WORDS;
    const uint row_scales = params.k / 32u;
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
    // The constant-count loops are unrolled: the loop over steps of BG blocks is the only
    // loop left.
    for (uint step = b_begin / BG; step < b_end / BG; ++step) {
        vec4 step_scales[RN];
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            step_scales[j] = load_scales(s_row[j] + step * BG);
        }
        [[unroll]] for (uint u = 0u; u < BG; ++u) {
            const uint blk = step * BG + u;
            uvec4 a[RN], b[RN];
            vec4 scale[RQ];
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                load_block(w_row[j] + blk * QUANT_BLOCK_WORDS, a[j], b[j]);
                scale[j / 4u][j % 4u] = step_scales[j][u];
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
                QVEC lo[RN], hi[RN];
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    lo[j] = decode_lo(a[j], b[j], c);
                    hi[j] = decode_hi(a[j], b[j], c);
                }
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    const uint e = x_row[i] + 32u * blk + 4u * c;
                    const QVEC xl = QVEC(load_x4(e));
                    const QVEC xh = QVEC(load_x4(e + 16u));
#if defined(Q4_0) && !defined(F16_MATH)
                    x_sum[i] += xl + xh;
#endif
                    [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                        d[i][q] += vec4(QSUM8(xl, lo[4u * q], xh, hi[4u * q]),
                                        QSUM8(xl, lo[4u * q + 1u], xh, hi[4u * q + 1u]),
                                        QSUM8(xl, lo[4u * q + 2u], xh, hi[4u * q + 2u]),
                                        QSUM8(xl, lo[4u * q + 3u], xh, hi[4u * q + 3u]));
                    }
                }
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
#if defined(Q4_0) && !defined(F16_MATH)
                const float offset = 8.0 * dot(x_sum[i], vec4(1.0)); // see block_offset
#else
                const float offset = 0.0;
#endif
                [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                    acc[i][q] += QUANT_SCALE(scale[q]) * (d[i][q] - offset);
                }
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint q = 0u; q < RQ; ++q) {
            store_quad(row0 + i, col0 + 4u * q, acc[i][q]);
        }
    }
}

#if defined(INTDOT)
// The blocked kernel on quantized X: per block an int32 dot product for each of its RM x RN
// outputs, times scale_w * scale_x, fp32 across blocks.
void blocked_intdot() {
    const uint col0 = gl_GlobalInvocationID.x * RN;
    const uint row0 = gl_WorkGroupID.y * RM;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint b_begin = k_begin / 32u;
    const uint b_end = min(params.k, k_begin + params.k_split) / 32u;
    const uint row_blocks = params.k / 32u;
    const uint row_words = row_blocks * QUANT_BLOCK_WORDS;
    const uint meta_base = params.x_base + params.m * row_blocks * 8u;
    uint w_row[RN], s_row[RN];
    [[unroll]] for (uint j = 0u; j < RN; ++j) {
        const uint col = min(col0 + j, params.n - 1u);
        w_row[j] = params.w_base + col * row_words;
        s_row[j] = params.s_base + col * row_blocks;
    }
    uint x_blk[RM]; // the row's first block in quantized X
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        x_blk[i] = min(row0 + i, params.m - 1u) * row_blocks;
    }
    vec4 acc[RM][RQ];
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint q = 0u; q < RQ; ++q) {
            acc[i][q] = vec4(0.0);
        }
    }
    for (uint step = b_begin / BG; step < b_end / BG; ++step) {
        vec4 step_scales[RN];
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            step_scales[j] = load_scales(s_row[j] + step * BG);
        }
        [[unroll]] for (uint u = 0u; u < BG; ++u) {
            const uint blk = step * BG + u;
            uvec4 a[RN], b[RN];
            vec4 scale[RQ];
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                load_block(w_row[j] + blk * QUANT_BLOCK_WORDS, a[j], b[j]);
                scale[j / 4u][j % 4u] = step_scales[j][u];
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                const uint xb = x_blk[i] + blk;
                const uvec4 xl = load_xq4(params.x_base + xb * 8u);
                const uvec4 xh = load_xq4(params.x_base + xb * 8u + 4u);
                const float x_scale = uintBitsToFloat(xq_data[meta_base + xb * 2u]);
#if defined(Q4_0)
                const int offset = 8 * int(xq_data[meta_base + xb * 2u + 1u]);
#else
                const int offset = 0;
#endif
                [[unroll]] for (uint q = 0u; q < RQ; ++q) {
                    const ivec4 d = ivec4(block_idot(a[4u * q], b[4u * q], xl, xh),
                                          block_idot(a[4u * q + 1u], b[4u * q + 1u], xl, xh),
                                          block_idot(a[4u * q + 2u], b[4u * q + 2u], xl, xh),
                                          block_idot(a[4u * q + 3u], b[4u * q + 3u], xl, xh)) -
                                    offset;
                    acc[i][q] += (scale[q] * x_scale) * vec4(d);
                }
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        [[unroll]] for (uint q = 0u; q < RQ; ++q) {
            store_quad(row0 + i, col0 + 4u * q, acc[i][q]);
        }
    }
}
#endif

#else
#error "matmul_quant.comp needs ROWDOT or BLOCKED"
#endif

void main() {
#if defined(ROWDOT)
    rowdot();
#elif defined(INTDOT)
    blocked_intdot();
#else
    blocked();
#endif
}
