#pragma once
// Every GPU op of a transformer block, as record_* functions that add dispatches to a
// CommandList: attention, matmul with a fused epilogue, LayerNorm, GELU, residual add,
// embedding lookup and KV-cache append. Tensors are passed as BufferRanges holding exactly
// the tensor (row-major, innermost last); a range may start at any multiple of its element
// size, and tensors larger than maxStorageBufferRange are bound in pieces by the op itself.
// Activations are fp32; weights and tables fp32 or fp16; arithmetic is fp32.
// Sizes are checked: a wrong range throws vkf::Error naming the op, the tensor and its shape.
// The ranges (and the scratch) must stay alive until the command list has run.

#include "host/ops/activation.hpp"
#include "host/ops/attention.hpp"
#include "host/ops/elementwise.hpp"
#include "host/ops/embedding.hpp"
#include "host/ops/gated_activation.hpp"
#include "host/ops/kv_append.hpp"
#include "host/ops/layernorm.hpp"
#include "host/ops/matmul.hpp"
#include "host/ops/pooling.hpp"
#include "host/ops/scale.hpp"
