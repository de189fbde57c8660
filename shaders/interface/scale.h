// The interface of shaders/scale.comp with host/ops/scale.cpp. See interface.h.
#ifndef VKF_INTERFACE_SCALE_H
#define VKF_INTERFACE_SCALE_H

#include "interface.h"

#define VKF_SCALE_PUSH(F)                                                        \
    F(uint, count)  /* elements of this dispatch */                              \
    F(uint, cols)   /* COLUMNS: row length, the column scale's size */           \
    F(uint, first)  /* COLUMNS: index of the dispatch's first element in its row \
                       grid, so that the column is (first + i) % cols */         \
    F(uint, x_base) /* where each tensor's first element sits in its binding */  \
    F(uint, y_base)                                                              \
    F(float, scale)
VKF_PUSH_CONSTANTS(ScaleParams, ScalePush, VKF_SCALE_PUSH)

#endif
