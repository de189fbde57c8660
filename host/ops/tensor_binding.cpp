#include "host/ops/tensor_binding.hpp"
#include "host/util/math.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf {

namespace {

std::string buffer_name(const BufferRange& r) {
    return r.buffer != nullptr ? r.buffer->name() : std::string("?");
}

}  // namespace

std::uint64_t binding_slack(const ComputeLimits& limits) {
    return limits.storage_offset_alignment + 4;
}

std::uint64_t max_bound_elements(const ComputeLimits& limits, std::uint32_t element_bytes) {
    const std::uint64_t range = limits.storage_buffer_range;
    const std::uint64_t slack = binding_slack(limits);
    // Shaders index bindings with 32-bit element indices.
    return std::min<std::uint64_t>(range > slack ? (range - slack) / element_bytes : 0, UINT32_MAX / 2);
}

ElementBinding bind_elements(const ComputeLimits& limits, const BufferRange& tensor, std::uint64_t first,
                             std::uint64_t count, std::uint32_t element_bytes, std::string_view op,
                             std::string_view tensor_name) {
    const std::uint64_t align = limits.storage_offset_alignment;
    const std::uint64_t begin = tensor.offset + first * element_bytes;
    const std::uint64_t aligned = begin / align * align;
    std::uint64_t end = tensor.offset + (first + count) * element_bytes;
    end = round_up(end, 4);
    const std::uint64_t buffer_size = tensor.buffer->size();
    if (end > buffer_size) {
        // Only an fp16 tensor with an odd end can get here: its last word is partly outside.
        throw Error(std::string(op) + ": " + std::string(tensor_name) + " in buffer '" + buffer_name(tensor) +
                    "' ends 2 bytes before the end of a buffer whose size is not a multiple of 4; allocate "
                    "fp16 tensors in buffers padded to whole 32-bit words");
    }
    const std::uint64_t size = end - aligned;
    if (size > limits.storage_buffer_range) {
        throw Error(std::string(op) + ": " + std::string(tensor_name) + " piece of " + fmt::to_string(count) +
                    " elements (" + fmt::to_string(size) + " bytes bound) exceeds maxStorageBufferRange (" +
                    fmt::to_string(limits.storage_buffer_range) + " bytes)");
    }
    return ElementBinding{.range = BufferRange{.buffer = tensor.buffer, .offset = aligned, .size = size},
                          .base = static_cast<std::uint32_t>((begin - aligned) / element_bytes)};
}

void check_tensor(const BufferRange& r, std::uint64_t elements, std::uint32_t element_bytes, std::string_view op,
                  std::string_view tensor_name, const std::string& shape) {
    const std::string who = std::string(op) + ": " + std::string(tensor_name) + " " + shape;
    if (r.buffer == nullptr || !r.buffer->valid()) {
        throw Error(who + " has no buffer");
    }
    if (elements == 0) {
        throw Error(who + " has no elements");
    }
    const std::uint64_t bytes = elements * element_bytes;
    if (r.size != bytes) {
        throw Error(who + " needs a range of " + fmt::to_string(bytes) + " bytes; got " + fmt::to_string(r.size) +
                    " bytes of buffer '" + buffer_name(r) + "'");
    }
    if (r.offset % element_bytes != 0 || r.offset > r.buffer->size() || r.size > r.buffer->size() - r.offset) {
        throw Error(who + ": range [" + fmt::to_string(r.offset) + ", +" + fmt::to_string(r.size) + ") of buffer '" +
                    buffer_name(r) + "' (" + fmt::to_string(r.buffer->size()) +
                    " bytes) is outside the buffer or not aligned to its element size");
    }
}

}  // namespace vkf
