// The flag bits of params.flags shared by the matmul kernel families (interface/matmul.h,
// interface/matmul_quant.h): the epilogue and split-K bits read by matmul_epilogue.glsl,
// and the dense kernels' own. See interface.h.
#ifndef VKF_INTERFACE_MATMUL_FLAGS_H
#define VKF_INTERFACE_MATMUL_FLAGS_H

#define VKF_MATMUL_FLAG_BIAS 1u
#define VKF_MATMUL_FLAG_RESIDUAL 2u
#define VKF_MATMUL_FLAG_GELU_TANH 4u
#define VKF_MATMUL_FLAG_GELU_ERF 8u
#define VKF_MATMUL_FLAG_PARTIALS 16u  // split-K: raw sums of the K slice instead of Y
#define VKF_MATMUL_FLAG_PAIRS 32u     // k and w_base even: W rows start on pairs (GEMV, BLOCKED)
// ROWDOT: rows of X and W start on the vector views' elements: k % 8 == 0, x_base % 4 == 0,
// w_base % 8 (fp32: 4) == 0; and for VEC16 (WIDE64) k % 16 == 0, w_base % 16 (fp32: 8) == 0.
#define VKF_MATMUL_FLAG_VEC8 64u
#define VKF_MATMUL_FLAG_VEC16 128u

#endif
