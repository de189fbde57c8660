// Helpers shared by vkformer's compute shaders.
#ifndef VKF_COMMON_GLSL
#define VKF_COMMON_GLSL

// The runtime splits dispatches over maxComputeWorkGroupCount with vkCmdDispatchBase, so
// gl_WorkGroupID (and hence gl_GlobalInvocationID) is global across the pieces, while
// gl_NumWorkGroups is only the piece's count: never index with gl_NumWorkGroups.
uint global_index_x() {
    return gl_GlobalInvocationID.x;
}

#endif
