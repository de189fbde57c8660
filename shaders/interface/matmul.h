// The interface of shaders/matmul.comp (every kernel variant and the split-K reduce pass)
// with host/ops/matmul.cpp. See interface.h for how one file serves GLSL and C++.
#ifndef VKF_INTERFACE_MATMUL_H
#define VKF_INTERFACE_MATMUL_H

#include "interface.h"
#include "matmul_bindings.h"
#include "matmul_flags.h"

// params.flags: VKF_MATMUL_FLAG_* (matmul_flags.h, shared with matmul_quant.h).

// Specialization constants (0-2: the workgroup size). The same ids mean different things
// in different kernels, which never share a pipeline.
#define VKF_MATMUL_SPEC_TM4 3  // tiled: tile rows / 4
#define VKF_MATMUL_SPEC_TN4 4  // tiled: tile columns / 4
#define VKF_MATMUL_SPEC_TK 5   // tiled: K elements per shared tile
#define VKF_MATMUL_SPEC_WG 3   // GEMV: == local_size_x
#define VKF_MATMUL_SPEC_RM 3   // BLOCKED, ROWDOT: rows of Y per invocation (workgroup)
#define VKF_MATMUL_SPEC_RN 4   // BLOCKED: columns per invocation; ROWDOT: per subgroup pass
#define VKF_MATMUL_SPEC_RG 5   // ROWDOT: groups of RN columns per workgroup

#define VKF_MATMUL_PUSH(F)                                                           \
    F(uint, m) /* rows of X and Y in this dispatch */                                \
    F(uint, n) /* rows of W (columns of Y) in this dispatch */                       \
    F(uint, k)                                                                       \
    F(uint, ldy)    /* row stride of Y and R, in elements */                         \
    F(uint, x_base) /* where each tensor's first element sits in its binding */      \
    F(uint, w_base)                                                                  \
    F(uint, bias_base)                                                               \
    F(uint, res_base)                                                                \
    F(uint, y_base)                                                                  \
    F(uint, k_split) /* K elements per slice (gl_WorkGroupID.z); k when not split */ \
    F(uint, n_splits)                                                                \
    F(uint, flags) /* VKF_MATMUL_FLAG_* */                                           \
    VKF_MATMUL_EPILOGUE_PUSH(F)
VKF_PUSH_CONSTANTS(MatmulParams, MatmulPush, VKF_MATMUL_PUSH)

#endif
