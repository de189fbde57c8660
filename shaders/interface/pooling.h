// The interface of shaders/pooling.comp with host/ops/pooling.cpp. See interface.h.
#ifndef VKF_INTERFACE_POOLING_H
#define VKF_INTERFACE_POOLING_H

#include "interface.h"

#define VKF_POOLING_FLAG_MEAN 1u       // the mean over the rows; else the first row (CLS)
#define VKF_POOLING_FLAG_NORMALIZE 2u  // divide by max(L2 norm, 1e-12)

#define VKF_POOLING_SPEC_WG 3  // == local_size_x, a power of two

#define VKF_POOLING_PUSH(F)                                                     \
    F(uint, rows)                                                               \
    F(uint, dim)                                                                \
    F(uint, x_base) /* where each tensor's first element sits in its binding */ \
    F(uint, y_base)                                                             \
    F(uint, flags) /* VKF_POOLING_FLAG_* */                                     \
    F(uint, reserved)
VKF_PUSH_CONSTANTS(PoolingParams, PoolingPush, VKF_POOLING_PUSH)

#endif
