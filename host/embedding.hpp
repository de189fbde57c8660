#pragma once
// Embedding lookup (shaders/embedding.comp): the push-constant mirror.
// record_embedding and its arguments are declared in host/ops.hpp.

#include "host/ops.hpp"

namespace vkf {

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
