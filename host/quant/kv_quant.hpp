#pragma once
// Block-quantized K and V of a KV cache (q8_0, q4_0; docs/QUANTIZATION.md): the bytes of a
// key row in each storage, and the CPU's packing into and out of the key-row layout of
// shaders/interface/kv_quant.h (the kernels' tests; kv_append quantizes on the device with
// the same rules as quantize_row).

#include "host/quant/quant_format.hpp"
#include "host/util/dtype.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

// Bytes of one key row (the row_values = n_kv_head * head_dim values of one key or value of
// every KV head) stored dense in `dense` (quant None) or in `quant` blocks with their fp16
// scales, packed per key row (shaders/interface/kv_quant.h).
std::uint64_t kv_row_bytes(DType dense, QuantFormat quant, std::uint32_t row_values);

// The kernels' VKF_KV_FORMAT_* for a side of a KV_QUANT variant (None: F16).
std::uint32_t kv_format_code(QuantFormat quant);

// Throws vkf::Error naming `what` (e.g. "K cache") unless a `quant` cache can hold heads of
// head_dim: any even size for None, a multiple of 32 for q8_0 and q4_0.
void check_kv_quant_head_dim(QuantFormat quant, std::uint32_t head_dim, const char* what);

// Throws vkf::Error unless a model's KV cache can store K in k, V in v and a side that is not
// quantized in `dense` (F32 or F16; F16 when either side is quantized), for heads of head_dim.
void check_kv_cache_format(DType dense, QuantFormat k, QuantFormat v, std::uint32_t head_dim);
// Bytes of one token's K and V in one layer of such a cache: what a longer context costs.
std::uint64_t kv_token_bytes(DType dense, QuantFormat k, QuantFormat v, std::uint32_t n_kv_head,
                             std::uint32_t head_dim);

// x: whole key rows of row_values (n_kv_head * head_dim) values; returns their words in the
// cache layout (quant_row's rules per row). Throws vkf::Error for a non-finite value or a
// scale over fp16.
std::vector<std::uint32_t> kv_quantize(QuantFormat quant, std::span<const float> x, std::uint32_t row_values);
// The exact fp32 values that quantized key rows stand for.
std::vector<float> kv_dequantize(QuantFormat quant, std::span<const std::uint32_t> words, std::uint32_t row_values);

}  // namespace vkf
