// The fused epilogue and the stores of the matmul kernels (shaders/matmul.comp and
// shaders/matmul_quant.comp): Y = act(acc + bias) + R, or with VKF_MATMUL_FLAG_PARTIALS
// the raw sums of a K slice, P[(slice * m + row) * n + col], for the reduce pass.
// The including shader declares `params` (flags, m, n, ldy and the *_base members),
// bias_data (VKF_WEIGHT, weights_io.glsl), res_data and y_data (float) before including it;
// SCATTER variants declare slot_data (uint) in place of res_data, and every shader defines
// VKF_MATMUL_WEIGHTS, its weight bindings, which place the K and V caches
// (interface/matmul_bindings.h). NO_EPILOGUE variants declare y_data (the partial sums) alone
// and store raw sums only.
//
// SCATTER (the fused QKV projection of a transformer layer): each output element goes where
// attention reads it, Q to Y and K and V into the caches at the rows' slots, so no separate
// pass repacks Q or appends to the cache (interface/matmul_flags.h). An fp16 cache
// is written one half of a 32-bit word at a time with atomics: the invocation owning the
// other half of the word may write it concurrently, and neither may overwrite the other.
#ifndef VKF_MATMUL_EPILOGUE_GLSL
#define VKF_MATMUL_EPILOGUE_GLSL

#include "common.glsl"
#include "gelu.glsl"

#if defined(SCATTER)
layout(constant_id = VKF_MATMUL_SPEC_SCATTER_HEAD_DIM) const uint SCATTER_D = 64;
layout(std430, binding = VKF_MATMUL_BINDING_K_CACHE(VKF_MATMUL_WEIGHTS)) buffer KCache { uint k_cache[]; };
layout(std430, binding = VKF_MATMUL_BINDING_V_CACHE(VKF_MATMUL_WEIGHTS)) buffer VCache { uint v_cache[]; };
#endif

#if !defined(NO_EPILOGUE)
float epilogue(float acc, uint row, uint col) {
    float v = acc;
    if ((params.flags & VKF_MATMUL_FLAG_BIAS) != 0u) {
        v += VKF_LOAD_WEIGHT(bias_data, params.bias_base + col);
    }
    if ((params.flags & VKF_MATMUL_FLAG_GELU_TANH) != 0u) {
        v = gelu_tanh(v);
    } else if ((params.flags & VKF_MATMUL_FLAG_GELU_ERF) != 0u) {
        v = gelu_erf(v);
    }
    if ((params.flags & VKF_MATMUL_FLAG_CLAMP) != 0u) {
        v = clamp(v, -params.clamp_to, params.clamp_to);
    }
#if !defined(SCATTER)
    if ((params.flags & VKF_MATMUL_FLAG_RESIDUAL) != 0u) {
        v += res_data[params.res_base + row * params.ldy + col];
    }
#endif
    return v;
}

#if defined(SCATTER)
// Element `index` of an fp16 cache: half `index & 1` of word `index >> 1`. The value is
// saturated to the finite fp16 range first (common.glsl), so an overflow cannot become an
// infinity (and a NaN in the next softmax); NaN stays NaN.
uint half_bits(float v, uint index) {
    return pack_half2_finite(vec2(v, 0.0)) << ((index & 1u) * 16u);
}
uint other_half(uint index) {
    return (index & 1u) == 0u ? 0xFFFF0000u : 0x0000FFFFu;
}

// Row and column of the whole output.
void scatter(uint row, uint col, float v) {
    const uint D = SCATTER_D;
    uint part, head, d;
    if ((params.flags & VKF_MATMUL_FLAG_SCATTER_INTERLEAVED) != 0u) {
        head = col / (3u * D);
        part = (col / D) % 3u;
        d = col % D;
    } else {
        const uint q_cols = params.q_heads * D;
        const uint kv_cols = params.kv_heads * D;
        part = col < q_cols ? 0u : (col < q_cols + kv_cols ? 1u : 2u);
        const uint c = part == 0u ? col : (part == 1u ? col - q_cols : col - q_cols - kv_cols);
        head = c / D;
        d = c % D;
    }
    if (part == 0u) {
        y_data[params.y_base + (row * params.q_heads + head) * D + d] = v;
        return;
    }
    // The slots are written by the host before each submission, after recording: one past
    // the cache (a padding row's) must not reach memory beyond it.
    const uint slot = slot_data[params.res_base + row];
    if (slot >= params.cache_rows) {
        return;
    }
    const uint index = (slot * params.kv_heads + head) * D + d;
    if ((params.flags & VKF_MATMUL_FLAG_CACHE_F16) != 0u) {
        if (part == 1u) {
            atomicAnd(k_cache[index >> 1u], other_half(index));
            atomicOr(k_cache[index >> 1u], half_bits(v, index));
        } else {
            atomicAnd(v_cache[index >> 1u], other_half(index));
            atomicOr(v_cache[index >> 1u], half_bits(v, index));
        }
    } else if (part == 1u) {
        k_cache[index] = floatBitsToUint(v);
    } else {
        v_cache[index] = floatBitsToUint(v);
    }
}
#endif

// The finished value of output element (row, col) of this dispatch.
void write_y(uint row, uint col, float v) {
#if defined(SCATTER)
    scatter(params.row0 + row, params.col0 + col, v);
#else
    y_data[params.y_base + row * params.ldy + col] = v;
#endif
}
#endif  // !NO_EPILOGUE

#if !defined(REDUCE)
// Callers pass only row < m and col < n.
void store(uint row, uint col, float acc) {
#if defined(NO_EPILOGUE)
    y_data[params.y_base + (gl_WorkGroupID.z * params.m + row) * params.n + col] = acc;
#else
#if !defined(SCATTER)  // split-K slices write their sums with the plain variant
    if ((params.flags & VKF_MATMUL_FLAG_PARTIALS) != 0u) {
        y_data[params.y_base + (gl_WorkGroupID.z * params.m + row) * params.n + col] = acc;
        return;
    }
#endif
    write_y(row, col, epilogue(acc, row, col));
#endif
}

void store_quad(uint row, uint col0, vec4 acc) {
    if (row >= params.m) {
        return;
    }
    // Unrolled by hand: no loop (per-invocation loop counts matter on llvmpipe).
    if (col0 < params.n) store(row, col0, acc.x);
    if (col0 + 1u < params.n) store(row, col0 + 1u, acc.y);
    if (col0 + 2u < params.n) store(row, col0 + 2u, acc.z);
    if (col0 + 3u < params.n) store(row, col0 + 3u, acc.w);
}
#endif

#endif
