// The interface of shaders/matmul_quant_x.comp (the activations' pre-pass of the quantized
// matmul's integer dot-product path) with host/ops/matmul_quant.cpp. See interface.h for
// how one file serves GLSL and C++.
#ifndef VKF_INTERFACE_MATMUL_QUANT_X_H
#define VKF_INTERFACE_MATMUL_QUANT_X_H

#include "interface.h"

// X [m, k] fp32 is cut along k into blocks of 32, each written as 8 words of int8 values
// (word c: elements 4c .. 4c + 3, little-endian) at q_base + (row * k / 32 + block) * 8, and
// its scale (fp32 bits) and the sum of its int8 values (int32) at
// q_base + m * k / 4 + (row * k / 32 + block) * 2. Rounding: d = amax / 127,
// q = clamp(roundEven(x * (127 / amax)), -127, 127), all zero where amax is 0
// (host/reference/quant_ops.hpp reproduces it).
#define VKF_MATMUL_QUANT_X_PUSH(F)                         \
    F(uint, m)      /* rows of X in this dispatch */       \
    F(uint, k)      /* a multiple of 32 */                 \
    F(uint, x_base) /* X's first element in its binding */ \
    F(uint, q_base) /* the output's first word in its binding */
VKF_PUSH_CONSTANTS(MatmulQuantXParams, MatmulQuantXPush, VKF_MATMUL_QUANT_X_PUSH)

#endif
