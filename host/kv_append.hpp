#pragma once
// KV-cache append (shaders/kv_append.comp): the push-constant mirror.
// record_kv_append and its arguments are declared in host/ops.hpp.

#include "host/ops.hpp"

namespace vkf {

// Mirrors KvAppendParams in shaders/kv_append.comp.
struct KvAppendPush {
    std::uint32_t new_len;
    std::uint32_t n_kv_head;
    std::uint32_t head_dim;
    std::uint32_t max_len;
    std::uint32_t pos;
    std::uint32_t src_base;
    std::uint32_t src_batch_stride;
    std::uint32_t src_token_stride;
    std::uint32_t src_head_stride;
    std::uint32_t cache_base;
};
static_assert(sizeof(KvAppendPush) == 40);

} // namespace vkf
