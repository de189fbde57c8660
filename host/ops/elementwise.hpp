#pragma once
// Elementwise kernels over 32-bit elements (shaders/elementwise.comp). Ranges larger than
// maxStorageBufferRange are recorded as several dispatches over bound sub-ranges.

#include "runtime/context.hpp"
#include "shaders/interface/elementwise.h"

#include <cstdint>

namespace vkf {

// ElementwisePush (push constants): shaders/interface/elementwise.h.
static_assert(sizeof(ElementwisePush) == 8);

void record_fill(Context& ctx, CommandList& list, BufferRange dst, std::uint32_t value);
void record_fill(Context& ctx, CommandList& list, BufferRange dst, float value);
void record_copy(Context& ctx, CommandList& list, BufferRange src, BufferRange dst);
// dst = a + b (float32). dst may be a or b.
void record_add(Context& ctx, CommandList& list, BufferRange a, BufferRange b, BufferRange dst);

}  // namespace vkf
