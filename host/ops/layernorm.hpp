#pragma once
// LayerNorm (and RMSNorm) over the last dimension (shaders/layernorm.comp), and its
// workgroup choice.

#include "host/util/dtype.hpp"
#include "runtime/context.hpp"
#include "shaders/interface/layernorm.h"

namespace vkf {

struct LayerNormArgs {
    BufferRange x;       // [rows, dim] fp32, rows x_stride apart
    BufferRange weight;  // [dim] weight_dtype
    BufferRange bias;    // [dim] weight_dtype, or no buffer (MPT's no_bias); none for RMSNorm
    BufferRange y;       // [rows, dim] fp32, rows y_stride apart; may be the same range as x
    std::uint32_t rows = 0, dim = 0;
    float eps = 1e-5f;
    DType weight_dtype = DType::F32;
    bool rms = false;  // RMSNorm: x / sqrt(mean(x^2) + eps) * weight
    // Elements from one row to the next, 0 meaning dim (dense). A strided range holds
    // (rows - 1) * stride + dim elements.
    std::uint32_t x_stride = 0, y_stride = 0;
};

void record_layernorm(Context& ctx, CommandList& list, const LayerNormArgs& args);

// LayerNormPush (push constants), VKF_LAYERNORM_FLAG_* and VKF_LAYERNORM_SPEC_*:
// shaders/interface/layernorm.h.
static_assert(sizeof(LayerNormPush) == 40);

// Invocations per row: a power of two within the limits, no wider than the row needs, and
// wide enough that the loops stay within the driver's loop limit. Throws vkf::Error when
// that is impossible.
std::uint32_t layernorm_workgroup_size(const ComputeLimits& limits, std::uint32_t dim);

}  // namespace vkf
