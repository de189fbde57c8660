// LayerNorm of X fused into matmul.comp's row-dot kernel (LN_X variants): X is the raw
// hidden state, normalized as it is loaded, (x - mean) * rstd * ln_w + ln_b, with the row's
// statistics computed first by each workgroup (k elements, against the RN x k of W it
// reads). Saves the LayerNorm dispatch, which on llvmpipe costs as much as the matmul.
// Included by the ROWDOT kernel after its constants (RM) and bindings; defines VKF_LN8 and
// VKF_LN1, which normalize X where it is loaded (nothing without LN_X).
#ifndef VKF_MATMUL_LAYERNORM_GLSL
#define VKF_MATMUL_LAYERNORM_GLSL

#if defined(LN_X)
// After X, W, bias, residual (the slots), Y and a scatter's caches.
#if defined(SCATTER)
#define VKF_MATMUL_LN_BINDING VKF_MATMUL_BINDING_LN_WEIGHT(VKF_MATMUL_WEIGHTS, 1)
#define VKF_MATMUL_LN_BIAS_BINDING VKF_MATMUL_BINDING_LN_BIAS(VKF_MATMUL_WEIGHTS, 1)
#else
#define VKF_MATMUL_LN_BINDING VKF_MATMUL_BINDING_LN_WEIGHT(VKF_MATMUL_WEIGHTS, 0)
#define VKF_MATMUL_LN_BIAS_BINDING VKF_MATMUL_BINDING_LN_BIAS(VKF_MATMUL_WEIGHTS, 0)
#endif
layout(std430, binding = VKF_MATMUL_LN_BINDING) readonly buffer LnWeight { VKF_WEIGHT ln_w[]; };
layout(std430, binding = VKF_MATMUL_LN_BIAS_BINDING) readonly buffer LnBias { VKF_WEIGHT ln_b[]; };
// Vector views (8 elements a load, as W's): on llvmpipe every load costs per lane, and the
// chunk loops normalize X once per group of columns.
#if defined(WEIGHTS_F16)
layout(std430, binding = VKF_MATMUL_LN_BINDING) readonly buffer LnWeight8 { uvec4 ln_w8[]; };
layout(std430, binding = VKF_MATMUL_LN_BIAS_BINDING) readonly buffer LnBias8 { uvec4 ln_b8[]; };
#else
layout(std430, binding = VKF_MATMUL_LN_BINDING) readonly buffer LnWeight4 { vec4 ln_w4[]; };
layout(std430, binding = VKF_MATMUL_LN_BIAS_BINDING) readonly buffer LnBias4 { vec4 ln_b4[]; };
#endif

float ln_mean[RM];
float ln_rstd[RM];

// Two passes over the row (the mean, then the variance of x - mean), each summed by the
// subgroup: layernorm.comp's arithmetic without its shift, as rows here are short.
void row_statistics(uint x_row[RM], uint lane, uint lanes) {
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        float s = 0.0;
        for (uint kk = lane; kk < params.k; kk += lanes) {
            s += x_data[x_row[i] + kk];
        }
        const float mean = subgroupAdd(s) / float(params.k);
        float sq = 0.0;
        for (uint kk = lane; kk < params.k; kk += lanes) {
            const float d = x_data[x_row[i] + kk] - mean;
            sq += d * d;
        }
        ln_mean[i] = mean;
        ln_rstd[i] = 1.0 / sqrt(subgroupAdd(sq) / float(params.k) + params.ln_eps);
    }
}

float ln_weight(uint kk) {
    return VKF_LOAD_WEIGHT(ln_w, kk);
}
float ln_bias(uint kk) {
    return (params.flags & VKF_MATMUL_FLAG_LN_BIAS) != 0u ? VKF_LOAD_WEIGHT(ln_b, kk) : 0.0;
}
// Elements kk .. kk + 7 of row i (kk a multiple of 8), normalized.
void ln8(inout vec4 lo, inout vec4 hi, uint i, uint kk) {
    vec4 w_lo, w_hi, b_lo = vec4(0.0), b_hi = vec4(0.0);
    const bool has_bias = (params.flags & VKF_MATMUL_FLAG_LN_BIAS) != 0u;
#if defined(WEIGHTS_F16)
    const uvec4 w = ln_w8[kk >> 3u];
    w_lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
    w_hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
    if (has_bias) {
        const uvec4 b = ln_b8[kk >> 3u];
        b_lo = vec4(unpackHalf2x16(b.x), unpackHalf2x16(b.y));
        b_hi = vec4(unpackHalf2x16(b.z), unpackHalf2x16(b.w));
    }
#else
    w_lo = ln_w4[kk >> 2u];
    w_hi = ln_w4[(kk >> 2u) + 1u];
    if (has_bias) {
        b_lo = ln_b4[kk >> 2u];
        b_hi = ln_b4[(kk >> 2u) + 1u];
    }
#endif
    lo = (lo - ln_mean[i]) * ln_rstd[i] * w_lo + b_lo;
    hi = (hi - ln_mean[i]) * ln_rstd[i] * w_hi + b_hi;
}
float ln1(float x, uint i, uint kk) {
    return (x - ln_mean[i]) * ln_rstd[i] * ln_weight(kk) + ln_bias(kk);
}
#define VKF_LN8(lo, hi, i, kk) ln8((lo), (hi), (i), (kk))
#define VKF_LN1(x, i, kk) ln1((x), (i), (kk))
#else
#define VKF_LN8(lo, hi, i, kk)
#define VKF_LN1(x, i, kk) (x)
#endif

#endif
