#pragma once
// Embedding lookup (shaders/embedding.comp): out[t, :] = table[ids[t], :]; ids >= vocab
// give zeros.

#include "host/quant/quant_format.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"
#include "shaders/interface/embedding.h"

namespace vkf {

struct EmbeddingArgs {
    BufferRange ids;    // [tokens] uint32
    BufferRange table;  // [vocab, hidden] table_dtype; may exceed maxStorageBufferRange
    BufferRange out;    // [tokens, hidden] fp32
    std::uint32_t tokens = 0, vocab = 0, hidden = 0;
    DType table_dtype = DType::F32;
    QuantFormat quant = QuantFormat::None;
    BufferRange scales;
};

void record_embedding(Context& ctx, CommandList& list, const EmbeddingArgs& args);

// EmbeddingPush (push constants): shaders/interface/embedding.h.
static_assert(sizeof(EmbeddingPush) == 36);

}  // namespace vkf
