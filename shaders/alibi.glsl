// ALiBi and position conventions shared by the attention kernels (docs/DESIGN.md).
// Needs: the push-constant block `params` with n_head, max_bias, alibi_pow2 and flags, and
// (when VKF_ATTN_FLAG_SLOPE_TABLE is set) a buffer `slope_table` of n_head floats.
#ifndef VKF_ALIBI_GLSL
#define VKF_ALIBI_GLSL

// The paper's slopes generalized by a maximum bias b, with c the largest power of two
// <= n_head: 2^(-b (h+1) / c) for h < c, then 2^(-b / (2c) * (2 (h - c) + 1)).
float alibi_slope_of_head(uint h) {
    if ((params.flags & VKF_ATTN_FLAG_SLOPE_TABLE) != 0u) {
        return slope_table[h];
    }
    const float c = float(params.alibi_pow2);
    if (h < params.alibi_pow2) {
        return exp2(-params.max_bias * float(h + 1u) / c);
    }
    return exp2(-params.max_bias / (2.0 * c) * float(2u * (h - params.alibi_pow2) + 1u));
}

// Bias added to the score of query position qpos against key position kpos.
float alibi_bias(float slope, int qpos, int kpos) {
    if ((params.flags & VKF_ATTN_FLAG_ALIBI_CAUSAL) != 0u) {
        return slope * float(kpos - qpos);
    }
    if ((params.flags & VKF_ATTN_FLAG_ALIBI_SYMMETRIC) != 0u) {
        return -slope * float(abs(kpos - qpos));
    }
    return 0.0;
}

#endif
