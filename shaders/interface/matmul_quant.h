// The interface of shaders/matmul_quant.comp (matmul with block-quantized weights) with
// host/ops/matmul_quant.cpp. The epilogue flags, the split-K partial sums and the reduce
// pass are matmul.comp's (interface/matmul_flags.h, interface/matmul.h). See interface.h for how one file serves
// GLSL and C++.
#ifndef VKF_INTERFACE_MATMUL_QUANT_H
#define VKF_INTERFACE_MATMUL_QUANT_H

#include "interface.h"
#include "matmul_bindings.h"
#include "matmul_flags.h"

// params.flags: VKF_MATMUL_FLAG_BIAS, _RESIDUAL, _GELU_TANH, _GELU_ERF and _PARTIALS
// (matmul_flags.h).

// Specialization constants (0-2: the workgroup size).
#define VKF_MATMUL_QUANT_SPEC_RM 3  // rows of Y per invocation (BLOCKED) or workgroup (ROWDOT)
#define VKF_MATMUL_QUANT_SPEC_RN 4  // columns of Y per invocation (BLOCKED, a multiple of 4) or subgroup pass
#define VKF_MATMUL_QUANT_SPEC_RG 5  // ROWDOT: groups of RN columns per workgroup
#define VKF_MATMUL_QUANT_SPEC_BG 6  // blocks per step (scales read together): 1, 2 or 4

#define VKF_MATMUL_QUANT_PUSH(F)                                                     \
    F(uint, m)      /* rows of X and Y in this dispatch */                           \
    F(uint, n)      /* rows of W (columns of Y) in this dispatch */                  \
    F(uint, k)      /* a multiple of 32 */                                           \
    F(uint, ldy)    /* row stride of Y and R, in elements */                         \
    F(uint, x_base) /* where each tensor's first element sits in its binding */      \
    F(uint, w_base) /* in 32-bit words of the values plane */                        \
    F(uint, s_base) /* in fp16 scales */                                             \
    F(uint, bias_base)                                                               \
    F(uint, res_base)                                                                \
    F(uint, y_base)                                                                  \
    F(uint, k_split) /* K elements per slice (gl_WorkGroupID.z), a multiple of 32 */ \
    F(uint, flags)   /* VKF_MATMUL_FLAG_* */                                         \
    VKF_MATMUL_EPILOGUE_PUSH(F)
VKF_PUSH_CONSTANTS(MatmulQuantParams, MatmulQuantPush, VKF_MATMUL_QUANT_PUSH)

#endif
