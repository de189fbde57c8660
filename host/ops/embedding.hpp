#pragma once
// Embedding lookup (shaders/embedding.comp): out[t, :] = table[ids[t], :]; ids >= vocab
// give zeros.

#include "host/util/dtype.hpp"
#include "runtime/context.hpp"

namespace vkf {

struct EmbeddingArgs {
    BufferRange ids;   // [tokens] uint32
    BufferRange table; // [vocab, hidden] table_dtype; may exceed maxStorageBufferRange
    BufferRange out;   // [tokens, hidden] fp32
    std::uint32_t tokens = 0, vocab = 0, hidden = 0;
    DType table_dtype = DType::F32;
};

void record_embedding(Context& ctx, CommandList& list, const EmbeddingArgs& args);

// Mirrors EmbeddingParams in shaders/embedding.comp.
struct EmbeddingPush {
    std::uint32_t tokens;
    std::uint32_t hidden;
    std::uint32_t vocab;
    std::uint32_t row_begin;
    std::uint32_t row_count;
    std::uint32_t ids_base;
    std::uint32_t table_base;
    std::uint32_t out_base;
    std::uint32_t zero_invalid;
};
static_assert(sizeof(EmbeddingPush) == 36);

} // namespace vkf
