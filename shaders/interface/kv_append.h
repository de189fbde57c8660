// The interface of shaders/kv_append.comp with host/ops/kv_append.cpp. See interface.h.
#ifndef VKF_INTERFACE_KV_APPEND_H
#define VKF_INTERFACE_KV_APPEND_H

#include "interface.h"

#define VKF_KV_APPEND_PUSH(F)                                                          \
    F(uint, new_len)                                                                   \
    F(uint, n_kv_head)                                                                 \
    F(uint, head_dim)                                                                  \
    F(uint, max_len)                                                                   \
    F(uint, pos)                                                                       \
    F(uint, src_base)         /* element (0, 0, 0, 0) of the source in its binding */  \
    F(uint, src_batch_stride) /* in elements */                                        \
    F(uint, src_token_stride)                                                          \
    F(uint, src_head_stride)                                                           \
    F(uint, cache_base) /* the cache's first element in its binding (even for fp16) */ \
    F(uint, slots_base) /* SLOTS: the first slot in its binding */
VKF_PUSH_CONSTANTS(KvAppendParams, KvAppendPush, VKF_KV_APPEND_PUSH)

#endif
