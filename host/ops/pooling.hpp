#pragma once
// Pooling of an encoder's token states (shaders/pooling.comp): the mean of the rows of
// x [rows, dim] or its first row, optionally L2-normalized, into y [dim]. Pooling::None
// needs no op (the states are the output).

#include "host/spec/pooling.hpp"
#include "runtime/context.hpp"
#include "shaders/interface/pooling.h"

namespace vkf {

struct PoolingArgs {
    BufferRange x;  // [rows, dim] fp32
    BufferRange y;  // [dim] fp32, not overlapping x
    std::uint32_t rows = 0, dim = 0;
    Pooling pooling = Pooling::Mean;  // Mean or Cls
    bool normalize = false;           // y / max(|y|_2, 1e-12)
};

// Throws vkf::Error for Pooling::None, zero rows or dim, ranges of the wrong size, x over
// maxStorageBufferRange, or more loop iterations per invocation than the driver runs.
void record_pooling(Context& ctx, CommandList& list, const PoolingArgs& args);

static_assert(sizeof(PoolingPush) == 24);

}  // namespace vkf
