// ALiBi and position conventions shared by the attention kernels (docs/DESIGN.md).
// Needs: the push-constant block `params` with n_head, max_bias, alibi_pow2 and flags, and
// (when VKF_ATTN_FLAG_SLOPE_TABLE is set) a buffer `slope_table` of n_head floats, or a
// VKF_SLOPE(h) of the including shader that reads head h's slope elsewhere.
#ifndef VKF_ALIBI_GLSL
#define VKF_ALIBI_GLSL

#ifndef VKF_SLOPE
#define VKF_SLOPE(h) slope_table[h]
#endif

// The paper's slopes generalized by a maximum bias b, with c the largest power of two
// <= n_head: 2^(-b (h+1) / c) for h < c, then 2^(-b / (2c) * (2 (h - c) + 1)).
float alibi_base_slope(uint h) {
    if ((params.flags & VKF_ATTN_FLAG_SLOPE_TABLE) != 0u) {
        return VKF_SLOPE(h);
    }
    const float c = float(params.alibi_pow2);
    if (h < params.alibi_pow2) {
        return exp2(-params.max_bias * float(h + 1u) / c);
    }
    return exp2(-params.max_bias / (2.0 * c) * float(2u * (h - params.alibi_pow2) + 1u));
}

// The slope of head h with `keys` valid keys: Jais' dynamic scaling shrinks the slopes once
// the keys pass its training length.
float alibi_slope_of_head(uint h, uint keys) {
    const float slope = alibi_base_slope(h);
    if ((params.flags & VKF_ATTN_FLAG_ALIBI_DYNAMIC) != 0u && keys > params.alibi_train_len) {
        return slope * (float(params.alibi_train_len) / float(keys));
    }
    return slope;
}

// fp32 -> bfloat16 -> fp32, rounding to nearest even (as torch converts).
float round_to_bf16(float x) {
    const uint u = floatBitsToUint(x);
    return uintBitsToFloat((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}

// Bias added to the scaled score of query position qpos against key position kpos.
float alibi_bias(float slope, int qpos, int kpos) {
    if ((params.flags & VKF_ATTN_FLAG_ALIBI_KEY_BF16) != 0u) {
        // Falcon: added to q.k before the scale, so it is scaled here.
        return round_to_bf16(slope * float(kpos)) * params.scale;
    }
    if ((params.flags & VKF_ATTN_FLAG_ALIBI_CAUSAL) != 0u) {
        return slope * float(kpos - qpos);
    }
    if ((params.flags & VKF_ATTN_FLAG_ALIBI_SYMMETRIC) != 0u) {
        return -slope * float(abs(kpos - qpos));
    }
    return 0.0;
}

#endif
