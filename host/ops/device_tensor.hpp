#pragma once
// float32 host data as a device tensor of F32 or F16 elements and back: what the
// convenience entry points, the tools and the tests need around the record_* ops.

#include "host/quant/quant_format.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace vkf {

// A tensor `pad` elements into a buffer of its own (rounded up to whole 32-bit words, as
// fp16 kernels read words). The buffer sits on the heap, so range() stays valid when the
// tensor is moved.
class DeviceTensor {
public:
    DeviceTensor() = default;
    DeviceTensor(Context& ctx, std::uint64_t elements, DType dtype, std::string name, std::uint32_t pad = 0);

    const Buffer& buffer() const { return *buffer_; }
    const BufferRange& range() const { return range_; }
    DType dtype() const { return dtype_; }
    std::uint64_t elements() const { return range_.size / element_size(dtype_); }

private:
    std::unique_ptr<Buffer> buffer_;
    BufferRange range_;
    DType dtype_ = DType::F32;
};

// `values` rounded to `dtype` (F32 or F16; anything else throws vkf::Error) on the device.
DeviceTensor upload_tensor(Context& ctx, std::span<const float> values, DType dtype, std::string name,
                           std::uint32_t pad = 0);
// Raw 32-bit words (token ids, lengths) on the device.
DeviceTensor upload_words(Context& ctx, std::span<const std::uint32_t> words, std::string name, std::uint32_t pad = 0);
// K or V key rows of row_values (n_kv_head * head_dim) values as a KV cache stores them:
// `dense` (F32, F16) when quant is None, else quantized (host/quant/kv_quant.hpp, its words
// as a U32 tensor).
DeviceTensor upload_kv_tensor(Context& ctx, std::span<const float> values, DType dense, QuantFormat quant,
                              std::uint32_t row_values, std::string name);
// The tensor's elements as float32.
std::vector<float> download_tensor(Context& ctx, const DeviceTensor& tensor);
// Elements [0, elements) of `buffer` made of `block` repeated (element i is
// block[i % block.size()]) as `dtype` (F32 or F16), uploaded in pieces of about 4 MiB:
// seeded random data for tensors of any size, a 500 MB LM head included, from one small
// block.
void upload_repeated(Context& ctx, const Buffer& buffer, std::span<const float> block, DType dtype,
                     std::uint64_t elements);
// The first `bytes` bytes of `buffer` made of `pattern` repeated (any bytes: quantized
// planes), uploaded the same way.
void upload_repeated_bytes(Context& ctx, const Buffer& buffer, std::span<const std::byte> pattern, std::uint64_t bytes);
// Every byte 0xFF: NaN in fp32 and fp16 alike, so an element no kernel writes is caught.
void poison(Context& ctx, const Buffer& buffer);
// An output tensor, poisoned.
DeviceTensor nan_tensor(Context& ctx, std::uint64_t elements, DType dtype, std::string name, std::uint32_t pad = 0);

}  // namespace vkf
