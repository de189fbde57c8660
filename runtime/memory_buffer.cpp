// Buffer: a VkBuffer bound to its range of a block the allocator hands out.
#include "runtime/memory.hpp"

#include "base/error.hpp"
#include "runtime/memory_internal.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>

namespace vkf {

using memory_detail::mib;

Buffer::Buffer(MemoryAllocator& allocator, VkDeviceSize size, MemoryKind kind, std::string name)
    : allocator_(&allocator), size_(size), kind_(kind), name_(std::move(name)) {
    if (size == 0) {
        throw Error("buffer '" + name_ + "': size is 0");
    }
    const VkDevice dev = allocator.device().handle();
    const auto failed = [&](VkResult r, const char* call) {
        const std::string what = std::string(call) + " for buffer '" + name_ + "' (" + mib(size) + ") failed with " +
                                 to_string(r) + " (" + fmt::to_string(static_cast<int>(r)) + ")";
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
            throw OutOfMemoryError("out of device memory: " + what);
        }
        check(r, what.c_str());
    };
    const VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                  .size = size,
                                  .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                           VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                  .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = allocator.injected_result();
    if (r == VK_SUCCESS) {
        r = vkCreateBuffer(dev, &info, nullptr, &buffer_);
    }
    if (r != VK_SUCCESS) {
        buffer_ = VK_NULL_HANDLE;
        failed(r, "vkCreateBuffer");
    }
    try {
        VkMemoryRequirements req{};
        vkGetBufferMemoryRequirements(dev, buffer_, &req);
        allocation_ = allocator.allocate(req, kind, name_);
        r = vkBindBufferMemory(dev, buffer_, allocation_.block->memory, allocation_.offset);
        if (r != VK_SUCCESS) {
            failed(r, "vkBindBufferMemory");
        }
    } catch (...) {
        release();
        throw;
    }
}

Buffer::~Buffer() {
    release();
}

Buffer::Buffer(Buffer&& other) noexcept {
    *this = std::move(other);
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        release();
        allocator_ = std::exchange(other.allocator_, nullptr);
        buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
        allocation_ = std::exchange(other.allocation_, Allocation{});
        size_ = std::exchange(other.size_, 0);
        kind_ = other.kind_;
        name_ = std::move(other.name_);
    }
    return *this;
}

bool Buffer::host_visible_fallback() const {
    return allocation_.block != nullptr && allocation_.block->fallback;
}

std::byte* Buffer::mapped() const {
    return allocation_.block != nullptr && allocation_.block->mapped != nullptr
               ? allocation_.block->mapped + allocation_.offset
               : nullptr;
}

void Buffer::release() noexcept {
    if (buffer_ == VK_NULL_HANDLE && allocation_.block == nullptr) {
        return;
    }
    // After a timeout the GPU may still read this buffer: then the device defers this.
    allocator_->device().release([allocator = allocator_, buffer = buffer_, allocation = allocation_]() noexcept {
        if (buffer != VK_NULL_HANDLE) {
            vkDestroyBuffer(allocator->device().handle(), buffer, nullptr);
        }
        if (allocation.block != nullptr) {
            allocator->free(allocation);
        }
    });
    buffer_ = VK_NULL_HANDLE;
    allocation_ = Allocation{};
}

}  // namespace vkf
