// The interface of shaders/elementwise.comp with host/ops/elementwise.cpp. See interface.h.
#ifndef VKF_INTERFACE_ELEMENTWISE_H
#define VKF_INTERFACE_ELEMENTWISE_H

#include "interface.h"

#define VKF_ELEMENTWISE_PUSH(F)                       \
    F(uint, count) /* elements in the bound ranges */ \
    F(uint, value) /* OP_FILL: the bit pattern */
VKF_PUSH_CONSTANTS(ElementwiseParams, ElementwisePush, VKF_ELEMENTWISE_PUSH)

#endif
