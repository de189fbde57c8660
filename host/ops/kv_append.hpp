#pragma once
// KV-cache append (shaders/kv_append.comp): new keys or values, read through any head
// layout, written into rows of a cache.

#include "host/quant/quant_format.hpp"
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
    // q8_0 or q4_0: the cache holds quantized key rows (shaders/interface/kv_quant.h; head_dim
    // a multiple of 32) and cache_dtype is not used; each new row is quantized as it is written.
    QuantFormat cache_quant = QuantFormat::None;
    // Optional [new_len] uint32 cache rows; set: row t goes to cache row slots[t] (shape.batch
    // must be 1, pos ignored). The slots may be written after recording, before each
    // submission; a slot >= max_len (a padding row's) writes nothing.
    BufferRange slots;
};

// Writes cache rows pos..pos+new_len-1 (or the slots) of every batch. With max_len = new_len
// and pos = 0 it repacks strided heads densely (Q out of a fused QKV output, for attention).
void record_kv_append(Context& ctx, CommandList& list, const KvAppendArgs& args);

// KvAppendPush (push constants): shaders/interface/kv_append.h.
static_assert(sizeof(KvAppendPush) == 44);

}  // namespace vkf
