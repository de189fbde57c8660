#pragma once
// CPU references of the quantized matmul's integer dot-product path (MatmulOptions::
// int8_activations, shaders/matmul_quant_x.comp and matmul_quant.comp INTDOT): the same
// quantization of X, the same integer sums per block, the scales applied once per block and
// the blocks summed in double.

#include "host/quant/quant_format.hpp"
#include "host/spec/activation.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf::reference {

// X [m, k] quantized per block of 32 as the GPU pre-pass does (interface/matmul_quant_x.h):
// d = amax / 127 and q = clamp(roundEven(x * (127 / amax)), -127, 127) in fp32, 0 where
// amax is 0; sums[b] is the block's sum of q.
struct Int8Activations {
    std::vector<std::int8_t> values;  // [m, k]
    std::vector<float> scales;        // [m, k / 32]
    std::vector<std::int32_t> sums;   // [m, k / 32]
};
Int8Activations quantize_activations(std::span<const float> x, std::uint32_t m, std::uint32_t k);

// act(sum over blocks of scale_w * scale_x * (integer dot product of the block) + bias) +
// residual, W block-quantized ([n] rows of `values` and `scales` as quantize_row writes
// them); bias and residual may be empty. Returns [m, n]. When `magnitude` is given it
// receives, per output, the sum over blocks of |scale_w * scale_x * dot| (the scale of the
// fp32 rounding the GPU's sum may carry).
std::vector<double> matmul_int8_activations(QuantFormat format, std::span<const float> x,
                                            std::span<const std::uint8_t> values, std::span<const std::uint16_t> scales,
                                            std::span<const float> bias, std::span<const float> residual,
                                            std::uint32_t m, std::uint32_t n, std::uint32_t k,
                                            Activation activation = Activation::None,
                                            std::vector<double>* magnitude = nullptr);

}  // namespace vkf::reference
