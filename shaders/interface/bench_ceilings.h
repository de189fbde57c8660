// The interface of shaders/bench_ceilings.comp with apps/bench/bench_ceilings.cpp. See
// interface.h.
#ifndef VKF_INTERFACE_BENCH_CEILINGS_H
#define VKF_INTERFACE_BENCH_CEILINGS_H

#include "interface.h"

#define VKF_CEILING_PUSH(F)                                                              \
    F(uint, count)      /* COPY: vec4 words; FMA: invocations that write their result */ \
    F(uint, iterations) /* FMA: loop iterations per invocation */                        \
    F(float, a)         /* FMA: x = x * a + b, with |a| < 1 so values stay bounded */    \
    F(float, b)
VKF_PUSH_CONSTANTS(CeilingParams, CeilingPush, VKF_CEILING_PUSH)

#endif
