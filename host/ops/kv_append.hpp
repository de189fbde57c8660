#pragma once
// KV-cache append (shaders/kv_append.comp): new keys or values, read through any head
// layout, written into rows of a cache.

#include "host/spec/kv_layout.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"
#include "shaders/interface/kv_append.h"

namespace vkf {

struct KvAppendArgs {
    BufferRange src;  // fp32, read through src_layout (e.g. the K part of a fused QKV output)
    HeadLayout src_layout;
    BufferRange cache;    // [batch, max_len, n_kv_head, head_dim] cache_dtype
    KvAppendShape shape;  // cache [batch, max_len, n_kv_head, head_dim], rows pos..pos+new_len-1
    DType cache_dtype = DType::F32;
};

// Writes cache rows pos..pos+new_len-1 of every batch. With max_len = new_len and pos = 0
// it repacks strided heads densely (Q out of a fused QKV output, for attention).
void record_kv_append(Context& ctx, CommandList& list, const KvAppendArgs& args);

// KvAppendPush (push constants): shaders/interface/kv_append.h.
static_assert(sizeof(KvAppendPush) == 40);

}  // namespace vkf
