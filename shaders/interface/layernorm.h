// The interface of shaders/layernorm.comp with host/ops/layernorm.cpp. See interface.h.
#ifndef VKF_INTERFACE_LAYERNORM_H
#define VKF_INTERFACE_LAYERNORM_H

#include "interface.h"

#define VKF_LAYERNORM_FLAG_BIAS 1u  // params.flags

#define VKF_LAYERNORM_SPEC_WG 3  // == local_size_x, a power of two

#define VKF_LAYERNORM_PUSH(F)                                                   \
    F(uint, rows)                                                               \
    F(uint, dim)                                                                \
    F(uint, x_base) /* where each tensor's first element sits in its binding */ \
    F(uint, y_base)                                                             \
    F(uint, weight_base)                                                        \
    F(uint, bias_base)                                                          \
    F(uint, flags) /* VKF_LAYERNORM_FLAG_* */                                   \
    F(float, eps)
VKF_PUSH_CONSTANTS(LayerNormParams, LayerNormPush, VKF_LAYERNORM_PUSH)

#endif
