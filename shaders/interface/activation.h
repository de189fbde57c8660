// The interface of shaders/activation.comp with host/ops/activation.cpp. See interface.h.
#ifndef VKF_INTERFACE_ACTIVATION_H
#define VKF_INTERFACE_ACTIVATION_H

#include "interface.h"

#define VKF_ACTIVATION_PUSH(F)                                                   \
    F(uint, count)                                                               \
    F(uint, src_base) /* where each range's first element sits in its binding */ \
    F(uint, dst_base)                                                            \
    F(float, bound) /* CLAMP only */
VKF_PUSH_CONSTANTS(ActivationParams, ActivationPush, VKF_ACTIVATION_PUSH)

#endif
