#version 450
// Y[m, n] = act(X[m, k] . W[n, k]^T + bias[n]) + R[m, n] on cooperative matrices
// (VK_NV_cooperative_matrix: NVIDIA's tensor cores), fp16 weights, fp32 activations,
// fp32 accumulation. host/ops/matmul_coopmat.cpp plans it; docs/DESIGN.md says why it
// exists and that it is opt-in until a GPU run has proven it (no device here has it).
//
// A workgroup of SG_M x SG_N subgroups owns a TM x TN tile of Y and walks its K slice in
// steps of TK through shared memory: X converted to fp16 (saturated to the finite range,
// common.glsl), W's fp16 as stored, both zero past the edges of m, n and the slice, so
// odd shapes need no other care in the multiply. Each subgroup owns FRAG_M x FRAG_N
// accumulator matrices of CM x CN (an fp32 fcoopmatNV each): per CK step it loads FRAG_M
// A matrices (rows of X, row-major) and, one at a time, FRAG_N B matrices (W's rows read
// column-major: B = W^T) from shared memory and multiply-adds. At the end each subgroup
// stores one accumulator at a time into its own fp32 staging block in shared memory, and
// its lanes pass the elements inside m and n through the common epilogue
// (matmul_epilogue.glsl: bias, activation, clamp, residual; SCATTER: the fused QKV
// projection's, Q to Y and K and V into the cache slots; or the raw sums of a K slice with
// VKF_MATMUL_FLAG_PARTIALS, for the split-K reduce pass of matmul.comp).
// Simple rather than fast: scalar loads into shared memory (W by fp16 pairs where rows
// start on pairs, VKF_MATMUL_FLAG_PAIRS), no double buffering, and workgroup barriers
// where a subgroup barrier would do.
// Needs full subgroups (the pipeline requires the plan's size): every cooperative-matrix
// operation runs in subgroup-uniform control flow, and all loops here are workgroup-uniform.
// EMULATE (tests, VKF_LIMITS coopmat_emulated): the same kernel on devices without
// cooperative matrices. Its "matrices" are the operations' own arguments: an A or B matrix is
// its element offset in shared memory, read there with the stride and layout the real load
// is given (GL_NV_cooperative_matrix: element (i, j) at offset + i * stride + j row-major,
// offset + j * stride + i column-major); an accumulator is CM * CN / EMU_LANES fp32 values per
// lane (element e = i * CN + j held by lane e % lanes). Only the matrix operations differ, so
// lavapipe checks everything else: the tiles, their offsets, split K and the epilogue.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#if !defined(EMULATE)
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#endif

#define WEIGHTS_F16
#include "interface/matmul_coopmat.h"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

#include "weights_io.glsl"

#define VKF_MATMUL_WEIGHTS VKF_MATMUL_WEIGHTS_DENSE  // interface/matmul_bindings.h
layout(std430, binding = VKF_MATMUL_BINDING_X) readonly buffer X { float x_data[]; };
layout(std430, binding = VKF_MATMUL_BINDING_W) readonly buffer W { VKF_WEIGHT w_data[]; };
layout(std430, binding = VKF_MATMUL_BINDING_BIAS(VKF_MATMUL_WEIGHTS)) readonly buffer Bias { VKF_WEIGHT bias_data[]; };
#if defined(SCATTER)
layout(std430, binding = VKF_MATMUL_BINDING_RESIDUAL(VKF_MATMUL_WEIGHTS)) readonly buffer Slots { uint slot_data[]; };
#else
layout(std430, binding = VKF_MATMUL_BINDING_RESIDUAL(VKF_MATMUL_WEIGHTS)) readonly buffer Residual { float res_data[]; };
#endif
layout(std430, binding = VKF_MATMUL_BINDING_Y(VKF_MATMUL_WEIGHTS)) writeonly buffer Y { float y_data[]; };

#include "matmul_epilogue.glsl"

layout(constant_id = VKF_COOPMAT_SPEC_CM) const uint CM = 16;
layout(constant_id = VKF_COOPMAT_SPEC_CN) const uint CN = 16;
layout(constant_id = VKF_COOPMAT_SPEC_CK) const uint CK = 16;
layout(constant_id = VKF_COOPMAT_SPEC_SG_M) const uint SG_M = 2;
layout(constant_id = VKF_COOPMAT_SPEC_SG_N) const uint SG_N = 2;
layout(constant_id = VKF_COOPMAT_SPEC_FRAG_M) const uint FRAG_M = 2;
layout(constant_id = VKF_COOPMAT_SPEC_FRAG_N) const uint FRAG_N = 2;
layout(constant_id = VKF_COOPMAT_SPEC_K_STEPS) const uint K_STEPS = 2;

const uint TM = SG_M * FRAG_M * CM;
const uint TN = SG_N * FRAG_N * CN;
const uint TK = K_STEPS * CK;
const uint XS = TK + VKF_COOPMAT_PAD_F16;  // row stride of the X and W tiles, in halves
const uint CS = CN + VKF_COOPMAT_PAD_F32;  // row stride of a staging block, in floats
const uint STAGE = CM * CS;                // floats of one subgroup's staging block

shared float16_t x_tile[TM * XS];  // [TM][TK] X rows, padded
shared float16_t w_tile[TN * XS];  // [TN][TK] W rows (B = W^T, read column-major)
shared float stage[SG_M * SG_N * STAGE];

// The matrix operations, written once for both forms: the arguments the kernel gives them
// are the same, so the emulation checks those too.
#if defined(EMULATE)
layout(constant_id = VKF_COOPMAT_SPEC_EMU_LANES) const uint EMU_LANES = 32;  // == gl_SubgroupSize
const uint EMU_PER_LANE = CM * CN / EMU_LANES;
float emu_acc[FRAG_M * FRAG_N * EMU_PER_LANE];

struct EmuMat {  // an A or B matrix as loaded: where it is in its tile, and how
    uint offset;
    uint stride;
    bool cols;  // column-major
};

// Accumulator f += A B: A (CM x CK) in x_tile, B (CK x CN) in w_tile.
void emu_mul_add(uint f, EmuMat a, EmuMat b) {
    for (uint q = 0u; q < EMU_PER_LANE; ++q) {
        const uint e = q * EMU_LANES + gl_SubgroupInvocationID;
        const uint i = e / CN;
        const uint j = e % CN;
        float sum = emu_acc[f * EMU_PER_LANE + q];
        for (uint kk = 0u; kk < CK; ++kk) {
            const uint ai = a.cols ? a.offset + kk * a.stride + i : a.offset + i * a.stride + kk;
            const uint bi = b.cols ? b.offset + j * b.stride + kk : b.offset + kk * b.stride + j;
            sum += float(x_tile[ai]) * float(w_tile[bi]);
        }
        emu_acc[f * EMU_PER_LANE + q] = sum;
    }
}

// Accumulator f into the staging blocks.
void emu_store(uint f, uint offset, uint stride, bool cols) {
    for (uint q = 0u; q < EMU_PER_LANE; ++q) {
        const uint e = q * EMU_LANES + gl_SubgroupInvocationID;
        const uint i = e / CN;
        const uint j = e % CN;
        stage[cols ? offset + j * stride + i : offset + i * stride + j] = emu_acc[f * EMU_PER_LANE + q];
    }
}

#define ACC_DECLARE()                                                \
    for (uint q = 0u; q < FRAG_M * FRAG_N * EMU_PER_LANE; ++q) {   \
        emu_acc[q] = 0.0;                                            \
    }
#define MAT_A EmuMat
#define MAT_B EmuMat
#define LOAD_A(m, offset, stride, cols) m = EmuMat(offset, stride, cols)
#define LOAD_B(m, offset, stride, cols) m = EmuMat(offset, stride, cols)
#define MUL_ADD(i, j, a, b) emu_mul_add((i) * FRAG_N + (j), a, b)
#define STORE_ACC(i, j, offset, stride, cols) emu_store((i) * FRAG_N + (j), offset, stride, cols)
#else
#define ACC_DECLARE()                                                       \
    fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> acc[FRAG_M][FRAG_N];           \
    [[unroll]] for (uint i = 0u; i < FRAG_M; ++i) {                         \
        [[unroll]] for (uint j = 0u; j < FRAG_N; ++j) {                     \
            acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);      \
        }                                                                   \
    }
#define MAT_A fcoopmatNV<16, gl_ScopeSubgroup, CM, CK>
#define MAT_B fcoopmatNV<16, gl_ScopeSubgroup, CK, CN>
#define LOAD_A(m, offset, stride, cols) coopMatLoadNV(m, x_tile, offset, stride, cols)
#define LOAD_B(m, offset, stride, cols) coopMatLoadNV(m, w_tile, offset, stride, cols)
#define MUL_ADD(i, j, a, b) acc[i][j] = coopMatMulAddNV(a, b, acc[i][j])
#define STORE_ACC(i, j, offset, stride, cols) coopMatStoreNV(acc[i][j], stage, offset, stride, cols)
#endif

// fp16 X, with values past fp16's range saturated rather than infinite.
float16_t x_half(uint row, uint kk, uint k_end) {
    if (row >= params.m || kk >= k_end) {
        return float16_t(0.0);
    }
    return float16_t(finite_f16(x_data[params.x_base + row * params.k + kk]));
}

// X[row0 .. row0 + TM, k0 .. k0 + TK] into x_tile, and W's rows col0 .. col0 + TN likewise
// into w_tile, zero outside the output and the slice.
void load_tiles(uint row0, uint col0, uint k0, uint k_end) {
    const uint tid = gl_LocalInvocationIndex;
    const uint wg = gl_WorkGroupSize.x;
    for (uint e = tid; e < TM * TK; e += wg) {
        const uint r = e / TK;
        const uint c = e % TK;
        x_tile[r * XS + c] = x_half(row0 + r, k0 + c, k_end);
    }
    if ((params.flags & VKF_MATMUL_FLAG_PAIRS) != 0u) {
        // k and w_base even, k0 even (TK is): each pair is one word of W.
        for (uint e = tid; e < TN * TK / 2u; e += wg) {
            const uint r = e / (TK / 2u);
            const uint c = 2u * (e % (TK / 2u));
            const uint col = col0 + r;
            const uint kk = k0 + c;
            vec2 pair = vec2(0.0);
            if (col < params.n && kk < k_end) {
                pair = unpackHalf2x16(w_data[(params.w_base + col * params.k + kk) >> 1u]);
                pair.y = kk + 1u < k_end ? pair.y : 0.0;
            }
            w_tile[r * XS + c] = float16_t(pair.x);
            w_tile[r * XS + c + 1u] = float16_t(pair.y);
        }
    } else {
        for (uint e = tid; e < TN * TK; e += wg) {
            const uint r = e / TK;
            const uint c = e % TK;
            const uint col = col0 + r;
            const uint kk = k0 + c;
            float v = 0.0;
            if (col < params.n && kk < k_end) {
                v = VKF_LOAD_WEIGHT(w_data, params.w_base + col * params.k + kk);
            }
            w_tile[r * XS + c] = float16_t(v);
        }
    }
}

void main() {
    const uint sg = gl_SubgroupID;
    const uint sg_m = sg / SG_N;
    const uint sg_n = sg % SG_N;
    const uint row0 = gl_WorkGroupID.y * TM;
    const uint col0 = gl_WorkGroupID.x * TN;
    const uint k_begin = gl_WorkGroupID.z * params.k_split;
    const uint k_end = min(params.k, k_begin + params.k_split);

    ACC_DECLARE()

    for (uint k0 = k_begin; k0 < k_end; k0 += TK) {
        load_tiles(row0, col0, k0, k_end);
        barrier();
        [[unroll]] for (uint s = 0u; s < K_STEPS; ++s) {
            // A: rows of X, row-major; B = W^T: W's rows read column-major.
            MAT_A a[FRAG_M];
            [[unroll]] for (uint i = 0u; i < FRAG_M; ++i) {
                const uint r = (sg_m * FRAG_M + i) * CM;
                LOAD_A(a[i], r * XS + s * CK, XS, false);
            }
            [[unroll]] for (uint j = 0u; j < FRAG_N; ++j) {
                const uint c = (sg_n * FRAG_N + j) * CN;
                MAT_B b;
                LOAD_B(b, c * XS + s * CK, XS, true);
                [[unroll]] for (uint i = 0u; i < FRAG_M; ++i) {
                    MUL_ADD(i, j, a[i], b);
                }
            }
        }
        barrier();  // the tiles are overwritten next
    }

    // One accumulator at a time through the subgroup's staging block to the epilogue.
    const uint lane = gl_SubgroupInvocationID;
    const uint lanes = gl_SubgroupSize;
    [[unroll]] for (uint i = 0u; i < FRAG_M; ++i) {
        [[unroll]] for (uint j = 0u; j < FRAG_N; ++j) {
            STORE_ACC(i, j, sg * STAGE, CS, false);
            barrier();
            const uint r0 = row0 + (sg_m * FRAG_M + i) * CM;
            const uint c0 = col0 + (sg_n * FRAG_N + j) * CN;
            for (uint e = lane; e < CM * CN; e += lanes) {
                const uint row = r0 + e / CN;
                const uint col = c0 + e % CN;
                if (row < params.m && col < params.n) {
                    store(row, col, stage[sg * STAGE + (e / CN) * CS + e % CN]);
                }
            }
            barrier();  // read before the next store overwrites the block
        }
    }
}
