// The interface of shaders/embedding.comp with host/ops/embedding.cpp. See interface.h.
#ifndef VKF_INTERFACE_EMBEDDING_H
#define VKF_INTERFACE_EMBEDDING_H

#include "interface.h"

#define VKF_EMBEDDING_PUSH(F)                                                                      \
    F(uint, tokens)                                                                                \
    F(uint, hidden)                                                                                \
    F(uint, vocab)                                                                                 \
    F(uint, row_begin) /* table rows bound in this dispatch: [row_begin, row_begin + row_count) */ \
    F(uint, row_count)                                                                             \
    F(uint, ids_base)   /* where each tensor's first element sits in its binding */                \
    F(uint, table_base) /* quantized tables: in 32-bit words of the values plane */                \
    F(uint, out_base)                                                                              \
    F(uint, scales_base)  /* quantized tables: in fp16 scales; else unused */                      \
    F(uint, zero_invalid) /* 1: write zeros for ids >= vocab */
VKF_PUSH_CONSTANTS(EmbeddingParams, EmbeddingPush, VKF_EMBEDDING_PUSH)

#endif
