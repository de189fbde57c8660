// The interface of shaders/layernorm.comp with host/ops/layernorm.cpp. See interface.h.
#ifndef VKF_INTERFACE_LAYERNORM_H
#define VKF_INTERFACE_LAYERNORM_H

#include "interface.h"

#define VKF_LAYERNORM_FLAG_BIAS 1u  // params.flags
// RMSNorm (Baichuan): y = x / sqrt(mean(x^2) + eps) * weight; no mean, no bias.
#define VKF_LAYERNORM_FLAG_RMS 2u

#define VKF_LAYERNORM_SPEC_WG 3  // == local_size_x, a power of two

#define VKF_LAYERNORM_PUSH(F)                                                   \
    F(uint, rows)                                                               \
    F(uint, dim)                                                                \
    F(uint, x_base) /* where each tensor's first element sits in its binding */ \
    F(uint, y_base)                                                             \
    F(uint, weight_base)                                                        \
    F(uint, bias_base)                                                          \
    F(uint, flags) /* VKF_LAYERNORM_FLAG_* */                                   \
    F(float, eps)                                                               \
    F(uint, x_stride) /* elements from one row to the next (>= dim) */          \
    F(uint, y_stride)
VKF_PUSH_CONSTANTS(LayerNormParams, LayerNormPush, VKF_LAYERNORM_PUSH)

#endif
