// The fused epilogue and the stores of the matmul kernels (shaders/matmul.comp and
// shaders/matmul_quant.comp): Y = act(acc + bias) + R, or with VKF_MATMUL_FLAG_PARTIALS
// the raw sums of a K slice, P[(slice * m + row) * n + col], for the reduce pass.
// The including shader declares `params` (flags, m, n, ldy and the *_base members),
// bias_data (VKF_WEIGHT, weights_io.glsl), res_data and y_data (float) before including it.
#ifndef VKF_MATMUL_EPILOGUE_GLSL
#define VKF_MATMUL_EPILOGUE_GLSL

#include "gelu.glsl"

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
    if ((params.flags & VKF_MATMUL_FLAG_RESIDUAL) != 0u) {
        v += res_data[params.res_base + row * params.ldy + col];
    }
    return v;
}

#if !defined(REDUCE)
// Callers pass only row < m and col < n.
void store(uint row, uint col, float acc) {
    if ((params.flags & VKF_MATMUL_FLAG_PARTIALS) != 0u) {
        y_data[params.y_base + (gl_WorkGroupID.z * params.m + row) * params.n + col] = acc;
    } else {
        y_data[params.y_base + row * params.ldy + col] = epilogue(acc, row, col);
    }
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
