#version 450
// Y[m, n] = act(X[m, k] . W[n, k]^T + bias[n]) + R[m, n]: activations fp32, weights fp32 or
// fp16 (WEIGHTS_F16), fp32 accumulation. Kernel variants (one per define):
//   (default) tiled: a workgroup owns a TM x TN tile of Y and walks K in steps of TK through
//             shared memory; each invocation owns a 4 x 4 block of Y held in four vec4s, so
//             the inner loop is one iteration per k with no nested loops (per-invocation
//             loop counts matter on llvmpipe, see runtime/quirks.cpp).
//   GEMV      few rows of X (decoding): a workgroup owns 4 columns of one row of Y, its
//             invocations split K and add their partial sums in shared memory.
//             matmul_gemv.glsl; GEMV_F16 is its fp16 arithmetic on fp16 weights (WEIGHTS_F16
//             implied): 8 products a fold, one 16-byte load of W per column where rows line up.
//   BLOCKED   no shared memory: each invocation owns an RM x RN block of Y and reads X and
//             W directly. The portable fallback, and the fastest kernel on CPU devices
//             (llvmpipe), where every memory load costs per invocation and barriers are
//             expensive, so work per load (RM * RN multiply-adds per RM + RN loads) is all.
//             matmul_blocked.glsl; WIDE64 (shaderInt64) reads 4 elements of W and X per
//             64-bit component where rows start on 8 elements (VKF_MATMUL_FLAG_VEC8).
//   ROWDOT    CPU devices (llvmpipe), few rows of X: the lanes of a subgroup stride along K
//             of the same RN rows of W, 8 elements (WIDE64: 16) per lane and step (one uvec4
//             of fp16 pairs or two vec4s of fp32), and subgroupAdd sums the lanes once at the
//             end. llvmpipe (Mesa 22.3) turns every storage-buffer load into a loop over the
//             lanes with a bounds-checked scalar load per component, so the cost goes with
//             the number of components loaded, not with their layout or the vector width:
//             WIDE64 (shaderInt64) reads W and X as u64vec4s, 16 halves or 8 floats a load,
//             half the components. X is loaded once per chunk for all RN rows. Needs subgroup
//             arithmetic; the blocked kernel is the fallback. A workgroup owns RN * RG columns
//             of Y (its subgroups take groups of RN in turn) and RM rows.
//   TILED_F16 the tiled kernel in fp16 arithmetic on fp16 weights (WEIGHTS_F16 implied;
//             needs shaderFloat16): fp16 tiles (half the shared memory), and each invocation
//             multiply-adds its 4 x 4 block in f16vec4s over kF16FoldProducts (8) k at a time,
//             then adds those partials to its fp32 accumulators: the fp16 error and range are
//             those of 8 products (docs/DESIGN.md), the sum over K and the epilogue fp32.
//   REDUCE    split-K second pass: sums the partial results of the K slices and applies
//             bias, activation and residual.
// NO_EPILOGUE (with a kernel other than REDUCE): binds X, W and the partial sums only (3
// storage buffers) and always writes raw sums P[(slice * m + row) * n + col]; the REDUCE
// pass (4) applies the epilogue. For devices with fewer than the 5 storage buffers per
// shader stage the fused epilogue needs (Vulkan guarantees 4).
// Grid: x = column tiles (of RN * WG columns for BLOCKED, RN * RG for ROWDOT), y = row
// tiles, z = K slices (split-K). With VKF_MATMUL_FLAG_PARTIALS the kernels other than
// REDUCE write raw sums P[(slice * m + row) * n + col] instead of Y.
// The host binds each tensor from an aligned offset at or below its first element; the
// *_base push constants say where that element sits in the binding, and ldy is the row
// stride of Y and R (the dispatch may cover only some of Y's columns). The reduce pass has
// no X: its x_base is the partial sums' base.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(ROWDOT)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#if defined(WIDE64)
#extension GL_ARB_gpu_shader_int64 : require
#endif
#if defined(TILED_F16) || defined(GEMV_F16)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define WEIGHTS_F16
#endif

#include "interface/matmul.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "weights_io.glsl"

// The weight bindings (interface/matmul_bindings.h): the REDUCE pass has none.
#if defined(REDUCE)
#define VKF_MATMUL_WEIGHTS 0
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer Partials { float partials[]; };
#else
#define VKF_MATMUL_WEIGHTS VKF_MATMUL_WEIGHTS_DENSE
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer X { float x_data[]; };
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W { VKF_WEIGHT w_data[]; };
#endif
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
#if defined(ROWDOT)
// Vector views of X and W (the same bindings), read only where the flags say rows line up.
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer X4 { vec4 x4_data[]; };
#if defined(WEIGHTS_F16)
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W8 { uvec4 w8_data[]; }; // 8 halves per element
#else
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W4 { vec4 w4_data[]; };
#endif
#if defined(WIDE64)
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W64 { u64vec4 w64_data[]; }; // 16 halves (8 floats)
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer X64 { u64vec4 x64_data[]; };  // 8 floats
#endif
#endif

#include "matmul_epilogue.glsl"

#if !defined(REDUCE)
float load_w(uint col, uint kk) {
    return VKF_LOAD_WEIGHT(w_data, params.w_base + col * params.k + kk);
}
#endif

#if defined(REDUCE)

void main() {
    const uint col = gl_GlobalInvocationID.x;
    const uint row = gl_WorkGroupID.y;
    if (col >= params.n) {
        return;
    }
    float acc = 0.0;
    for (uint s = 0u; s < params.n_splits; ++s) {
        acc += partials[params.x_base + (s * params.m + row) * params.n + col];
    }
    write_y(row, col, epilogue(acc, row, col));
}

#elif defined(BLOCKED)

#include "matmul_blocked.glsl"

#elif defined(ROWDOT)

layout(constant_id = VKF_MATMUL_SPEC_RM) const uint RM = 1; // rows of Y per workgroup
layout(constant_id = VKF_MATMUL_SPEC_RN) const uint RN = 4; // columns of Y per subgroup pass
layout(constant_id = VKF_MATMUL_SPEC_RG) const uint RG = 8; // groups of RN columns per workgroup

// W[e .. e + 7]; e a multiple of 8 (fp32: 4).
void load_w8(uint e, out vec4 lo, out vec4 hi) {
#if defined(WEIGHTS_F16)
    const uvec4 q = w8_data[e >> 3u];
    lo = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
    hi = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
#else
    lo = w4_data[e >> 2u];
    hi = w4_data[(e >> 2u) + 1u];
#endif
}

#if defined(WIDE64)
vec4 halves4(uint64_t v) {
    const uvec2 u = unpackUint2x32(v);
    return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
}
vec4 floats2x2(uint64_t a, uint64_t b) {
    return vec4(uintBitsToFloat(unpackUint2x32(a)), uintBitsToFloat(unpackUint2x32(b)));
}
// W[e .. e + 15]; e a multiple of 16 (fp32: 8).
void load_w16(uint e, out vec4 w0, out vec4 w1, out vec4 w2, out vec4 w3) {
#if defined(WEIGHTS_F16)
    const u64vec4 q = w64_data[e >> 4u];
    w0 = halves4(q.x);
    w1 = halves4(q.y);
    w2 = halves4(q.z);
    w3 = halves4(q.w);
#else
    const u64vec4 q = w64_data[e >> 3u];
    const u64vec4 r = w64_data[(e >> 3u) + 1u];
    w0 = floats2x2(q.x, q.y);
    w1 = floats2x2(q.z, q.w);
    w2 = floats2x2(r.x, r.y);
    w3 = floats2x2(r.z, r.w);
#endif
}
#endif

// LN_X: a LayerNorm of X fused into this kernel.
#include "matmul_layernorm.glsl"

void main() {
    const uint lane = gl_SubgroupInvocationID;
    const uint lanes = gl_SubgroupSize;
    const uint row0 = gl_WorkGroupID.y * RM;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint k_end = min(params.k, k_begin + params.k_split);
    // Rows and columns past the edges read the last one (in bounds) and are never stored.
    uint x_row[RM];
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        x_row[i] = params.x_base + min(row0 + i, params.m - 1u) * params.k;
    }
#if defined(LN_X)
    row_statistics(x_row, lane, lanes);
#endif
    // Subgroup-uniform loop: all lanes of a subgroup take the same groups.
    for (uint g = gl_SubgroupID; g < RG; g += gl_NumSubgroups) {
        const uint col0 = (gl_WorkGroupID.x * RG + g) * RN;
        if (col0 >= params.n) {
            break;
        }
        uint w_row[RN];
        [[unroll]] for (uint j = 0u; j < RN; ++j) {
            w_row[j] = params.w_base + min(col0 + j, params.n - 1u) * params.k;
        }
        float acc[RM][RN];
        [[unroll]] for (uint i = 0u; i < RM; ++i) {
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                acc[i][j] = 0.0;
            }
        }
        // Chunks of 16 or 8 elements; lane l takes chunks l, l + lanes, ...
        uint tail = k_begin;
#if defined(WIDE64)
        if ((params.flags & VKF_MATMUL_FLAG_VEC16) != 0u) {
            const uint chunks = (k_end - k_begin) / 16u;
            for (uint c = lane; c < chunks; c += lanes) {
                const uint kk = k_begin + 16u * c;
                vec4 x0[RM], x1[RM], x2[RM], x3[RM];
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    const uint e = (x_row[i] + kk) >> 3u;
                    const u64vec4 p = x64_data[e];
                    const u64vec4 q = x64_data[e + 1u];
                    x0[i] = floats2x2(p.x, p.y);
                    x1[i] = floats2x2(p.z, p.w);
                    x2[i] = floats2x2(q.x, q.y);
                    x3[i] = floats2x2(q.z, q.w);
                    VKF_LN8(x0[i], x1[i], i, kk);
                    VKF_LN8(x2[i], x3[i], i, kk + 8u);
                }
                // One row of W at a time: few values live at once.
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    vec4 w0, w1, w2, w3;
                    load_w16(w_row[j] + kk, w0, w1, w2, w3);
                    [[unroll]] for (uint i = 0u; i < RM; ++i) {
                        acc[i][j] += (dot(x0[i], w0) + dot(x1[i], w1)) + (dot(x2[i], w2) + dot(x3[i], w3));
                    }
                }
            }
            tail = k_begin + 16u * chunks;
        } else
#endif
        if ((params.flags & VKF_MATMUL_FLAG_VEC8) != 0u) {
            const uint chunks = (k_end - k_begin) / 8u;
            for (uint c = lane; c < chunks; c += lanes) {
                const uint kk = k_begin + 8u * c;
                vec4 x_lo[RM], x_hi[RM];
                [[unroll]] for (uint i = 0u; i < RM; ++i) {
                    const uint e = (x_row[i] + kk) >> 2u;
                    x_lo[i] = x4_data[e];
                    x_hi[i] = x4_data[e + 1u];
                    VKF_LN8(x_lo[i], x_hi[i], i, kk);
                }
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    vec4 w_lo, w_hi;
                    load_w8(w_row[j] + kk, w_lo, w_hi);
                    [[unroll]] for (uint i = 0u; i < RM; ++i) {
                        acc[i][j] += dot(x_lo[i], w_lo) + dot(x_hi[i], w_hi);
                    }
                }
            }
            tail = k_begin + 8u * chunks;
        }
        // Element by element: the end of a slice, or all of it when rows do not line up.
        for (uint kk = tail + lane; kk < k_end; kk += lanes) {
            float w[RN];
            [[unroll]] for (uint j = 0u; j < RN; ++j) {
                w[j] = VKF_LOAD_WEIGHT(w_data, w_row[j] + kk);
            }
            [[unroll]] for (uint i = 0u; i < RM; ++i) {
                const float x = VKF_LN1(x_data[x_row[i] + kk], i, kk);
                [[unroll]] for (uint j = 0u; j < RN; ++j) {
                    acc[i][j] += x * w[j];
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

#elif defined(GEMV) || defined(GEMV_F16)

#include "matmul_gemv.glsl"

#else // tiled

layout(constant_id = VKF_MATMUL_SPEC_TM4) const uint TM4 = 16; // tile rows / 4: invocations along M
layout(constant_id = VKF_MATMUL_SPEC_TN4) const uint TN4 = 16; // tile columns / 4: invocations along N
layout(constant_id = VKF_MATMUL_SPEC_TK) const uint TK = 16;  // K elements per shared tile
const uint TM = 4u * TM4;
const uint TN = 4u * TN4;
const uint WG = TM4 * TN4; // == local_size_x

// Transposed tiles, [k][row / 4] and [k][col / 4]: an invocation reads its four rows (and
// four columns) at one k as a single vec4.
// Bank conflicts (32 banks of 4 bytes): the loads below give consecutive invocations
// consecutive k of one row (coalesced global reads), so their transposed stores land one
// tile row apart. With a row of TM4 vec4s (TM4 = 16: 64 floats) every one of a row's TK
// stores hit the same bank, a TK-way conflict. Rows of an odd number of vec4s (XS4, WS4:
// TM4 and TN4 rounded up to odd, one vec4 of padding at most) start 4 banks further along
// each k, so the TK stores spread over 8 banks: conflict-free up to TK = 8, 2-way at
// TK = 16 (the vec4 reads fix each invocation's bank modulo 4, so 8 bank groups are all a
// row can use). The vec4 reads are unchanged: one row per k, consecutive tx on consecutive
// vec4s, ty shared (a broadcast). host/ops/matmul.cpp's Tile::shared_bytes counts the padding.
const uint XS4 = TM4 | 1u;
const uint WS4 = TN4 | 1u;
#if defined(TILED_F16)
#define TILE_VEC f16vec4
#define TILE_ELEM float16_t
const uint FOLD = 8u; // == kF16FoldProducts (host/ops/matmul.hpp); TK is a multiple
#else
#define TILE_VEC vec4
#define TILE_ELEM float
#endif
shared TILE_VEC x_tile[TK * XS4];
shared TILE_VEC w_tile[TK * WS4];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % TN4;
    const uint ty = tid / TN4;
    const uint row0 = gl_WorkGroupID.y * TM;
    const uint col0 = gl_WorkGroupID.x * TN;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint k_end = min(params.k, k_begin + params.k_split);

    vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0);
    for (uint k0 = k_begin; k0 < k_end; k0 += TK) {
        // Consecutive invocations read consecutive k of one row: coalesced.
        for (uint e = tid; e < TM * TK; e += WG) {
            const uint r = e / TK;
            const uint c = e % TK;
            const uint row = row0 + r;
            const uint kk = k0 + c;
            float v = 0.0;
            if (row < params.m && kk < k_end) {
                v = x_data[params.x_base + row * params.k + kk];
            }
            x_tile[c * XS4 + r / 4u][r % 4u] = TILE_ELEM(v);
        }
        for (uint e = tid; e < TN * TK; e += WG) {
            const uint r = e / TK;
            const uint c = e % TK;
            const uint col = col0 + r;
            const uint kk = k0 + c;
            float v = 0.0;
            if (col < params.n && kk < k_end) {
                v = load_w(col, kk);
            }
            w_tile[c * WS4 + r / 4u][r % 4u] = TILE_ELEM(v);
        }
        barrier();
#if defined(TILED_F16)
        for (uint c0 = 0u; c0 < TK; c0 += FOLD) {
            f16vec4 h0 = f16vec4(0.0hf), h1 = f16vec4(0.0hf), h2 = f16vec4(0.0hf), h3 = f16vec4(0.0hf);
            for (uint c = c0; c < c0 + FOLD; ++c) {
                const f16vec4 a = x_tile[c * XS4 + ty];
                const f16vec4 b = w_tile[c * WS4 + tx];
                h0 = fma(a.xxxx, b, h0);
                h1 = fma(a.yyyy, b, h1);
                h2 = fma(a.zzzz, b, h2);
                h3 = fma(a.wwww, b, h3);
            }
            acc0 += vec4(h0);
            acc1 += vec4(h1);
            acc2 += vec4(h2);
            acc3 += vec4(h3);
        }
#else
        for (uint c = 0u; c < TK; ++c) {
            const vec4 a = x_tile[c * XS4 + ty];
            const vec4 b = w_tile[c * WS4 + tx];
            acc0 += a.x * b;
            acc1 += a.y * b;
            acc2 += a.z * b;
            acc3 += a.w * b;
        }
#endif
        barrier(); // the tiles are overwritten next
    }
    const uint row = row0 + 4u * ty;
    const uint col = col0 + 4u * tx;
    store_quad(row, col, acc0);
    store_quad(row + 1u, col, acc1);
    store_quad(row + 2u, col, acc2);
    store_quad(row + 3u, col, acc3);
}

#endif
