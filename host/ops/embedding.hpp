#pragma once
// Embedding lookup (shaders/embedding.comp): out[t, :] = table[ids[t], :]; ids >= vocab
// give zeros. The table may be block-quantized (q8_0, q4_0) or in ggml's blocks as GGUF
// stores them (the K-quants q2_K .. q6_K, and q4_1, q5_0, q5_1).

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
    // Block-quantized tables: table is then the values plane [vocab, quant_row_bytes(quant,
    // hidden)] bytes (starting on a 32-bit word) and scales the fp16 scales [vocab, hidden / 32];
    // table_dtype is ignored. Rows are dequantized exactly (as dequantize_row).
    // Tables in ggml's blocks (is_kquant): table is the blocks [vocab, kquant_row_bytes(hidden)]
    // bytes at any byte offset, hidden a multiple of the block's 256 or 32 weights, scales
    // unused; rows equal dequantize_kquant_row's.
    QuantFormat quant = QuantFormat::None;
    BufferRange scales;
};

void record_embedding(Context& ctx, CommandList& list, const EmbeddingArgs& args);

// EmbeddingPush (push constants): shaders/interface/embedding.h.
static_assert(sizeof(EmbeddingPush) == 40);

}  // namespace vkf
