#pragma once
// Binding tensors (or pieces of them) that start at any element: a storage-buffer binding
// must start at a multiple of minStorageBufferOffsetAlignment and be at most
// maxStorageBufferRange long, so a piece is bound from the aligned offset at or below its
// first element, and the shader is told where in the binding that element sits (`base`).

#include "base/format.hpp"  // shape_text, for the messages of check_tensor
#include "runtime/command_list.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace vkf {

struct ElementBinding {
    BufferRange range;       // what to bind
    std::uint32_t base = 0;  // index of the first element within the binding
};

// Bytes a binding may need beyond its elements' own: the alignment step back plus rounding
// the end up to a whole 32-bit word (fp16 data is read as words).
std::uint64_t binding_slack(const ComputeLimits& limits);

// Elements [first, first + count) of `tensor` (element_bytes 2 or 4) as one binding.
// Throws vkf::Error (naming op and tensor) when it would exceed maxStorageBufferRange.
ElementBinding bind_elements(const ComputeLimits& limits, const BufferRange& tensor, std::uint64_t first,
                             std::uint64_t count, std::uint32_t element_bytes, std::string_view op,
                             std::string_view tensor_name);

// The most elements a piece bound by bind_elements can hold on this device.
std::uint64_t max_bound_elements(const ComputeLimits& limits, std::uint32_t element_bytes);

// Throws vkf::Error unless `r` is a buffer range of exactly `elements` elements, starting
// at a multiple of the element size. `shape` is shown in the message, e.g. "[7, 64] f16".
void check_tensor(const BufferRange& r, std::uint64_t elements, std::uint32_t element_bytes, std::string_view op,
                  std::string_view tensor_name, const std::string& shape);

}  // namespace vkf
