#pragma once
// Scaling fp32 tensors (shaders/scale.comp): by a number, or each column of [rows, cols] by
// its own factor times a number. Logit scales (MPT logit_scale, Jais' muP output
// multiplier), Baichuan2's row-normalized LM head and Jais' embedding multiplier. y may be
// the same range as x; tensors over maxStorageBufferRange are bound in pieces.

#include "runtime/context.hpp"
#include "shaders/interface/scale.h"

namespace vkf {

// y = x * scale.
void record_scale(Context& ctx, CommandList& list, BufferRange x, BufferRange y, float scale);
// y[r, c] = x[r, c] * scale * columns[c]; x and y hold whole rows of columns.size / 4.
void record_scale_columns(Context& ctx, CommandList& list, BufferRange x, BufferRange columns, BufferRange y,
                          float scale);

static_assert(sizeof(ScalePush) == 24);

}  // namespace vkf
