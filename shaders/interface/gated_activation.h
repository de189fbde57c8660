// The interface of shaders/gated_activation.comp with host/ops/gated_activation.cpp. See
// interface.h.
#ifndef VKF_INTERFACE_GATED_ACTIVATION_H
#define VKF_INTERFACE_GATED_ACTIVATION_H

#include "interface.h"

// y[r, c] = act(gate[r, c]) * up[r, c] over [rows, cols]; gate and up are rows of their own
// strides (both halves of one fused projection's output, or two outputs), y is dense.
#define VKF_GATED_ACTIVATION_PUSH(F)                                               \
    F(uint, rows)                                                                  \
    F(uint, cols)                                                                  \
    F(uint, gate_base) /* where each tensor's first element sits in its binding */ \
    F(uint, gate_stride)                                                           \
    F(uint, up_base)                                                               \
    F(uint, up_stride)                                                             \
    F(uint, y_base)                                                                \
    F(uint, reserved)
VKF_PUSH_CONSTANTS(GatedActivationParams, GatedActivationPush, VKF_GATED_ACTIVATION_PUSH)

#endif
