// Helpers shared by vkformer's compute shaders.
#ifndef VKF_COMMON_GLSL
#define VKF_COMMON_GLSL

// The runtime splits dispatches over maxComputeWorkGroupCount with vkCmdDispatchBase, so
// gl_WorkGroupID (and hence gl_GlobalInvocationID) is global across the pieces, while
// gl_NumWorkGroups is only the piece's count: never index with gl_NumWorkGroups.
uint global_index_x() {
    return gl_GlobalInvocationID.x;
}

// fp32 -> fp16 storage. A value past fp16's range would be stored as +-inf, which the next
// softmax or LayerNorm turns into NaN for the whole row; every fp16 store goes through
// these helpers instead, which saturate to the largest finite half, +-65504 (fp32 infinities
// included). NaN stays NaN: GLSL leaves clamp() of NaN undefined (min/max may return either
// operand), so it is passed around the clamp explicitly. Values inside the range are
// untouched, so rounding is packHalf2x16's as before.
const float VKF_F16_MAX = 65504.0;

float finite_f16(float v) {
    return isnan(v) ? v : clamp(v, -VKF_F16_MAX, VKF_F16_MAX);
}

vec2 finite_f16(vec2 v) {
    return mix(clamp(v, vec2(-VKF_F16_MAX), vec2(VKF_F16_MAX)), v, isnan(v));
}

// packHalf2x16 of v saturated as finite_f16.
uint pack_half2_finite(vec2 v) {
    return packHalf2x16(finite_f16(v));
}

#endif
