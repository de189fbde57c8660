#pragma once
// Device memory: buffers are sub-allocated from large VkDeviceMemory blocks (one block per
// buffer only for buffers bigger than half a block), so maxMemoryAllocationCount (4096 on
// many drivers) is never the limit. Host-visible blocks stay mapped for their lifetime.

#include "runtime/device.hpp"

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vkf {

enum class MemoryKind {
    Device,  // device-local; on unified-memory devices (lavapipe, phones) also host-visible
    Host,    // host-visible and coherent: staging and read-back
};

struct MemoryStats {
    std::uint64_t block_bytes = 0;   // VkDeviceMemory allocated
    std::uint64_t buffer_bytes = 0;  // sub-allocated to live buffers
    std::uint32_t block_count = 0;
    std::uint32_t buffer_count = 0;
};

class MemoryAllocator;

struct Allocation {
    struct Block* block = nullptr;
    VkDeviceSize offset = 0;
    VkDeviceSize size = 0;
};

// A storage buffer with its own VkBuffer bound to a range of a shared memory block.
class Buffer {
public:
    Buffer() = default;
    Buffer(MemoryAllocator& allocator, VkDeviceSize size, MemoryKind kind, std::string name);
    ~Buffer();
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    VkBuffer handle() const { return buffer_; }
    VkDeviceSize size() const { return size_; }
    MemoryKind kind() const { return kind_; }
    const std::string& name() const { return name_; }
    // Host pointer to the buffer's first byte, or nullptr when the memory is not host-visible.
    std::byte* mapped() const;
    bool valid() const { return buffer_ != VK_NULL_HANDLE; }

private:
    void release() noexcept;

    MemoryAllocator* allocator_ = nullptr;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    Allocation allocation_;
    VkDeviceSize size_ = 0;
    MemoryKind kind_ = MemoryKind::Device;
    std::string name_;
};

class MemoryAllocator {
public:
    explicit MemoryAllocator(const Device& device, VkDeviceSize block_size = 64ull << 20);
    ~MemoryAllocator();
    MemoryAllocator(const MemoryAllocator&) = delete;
    MemoryAllocator& operator=(const MemoryAllocator&) = delete;

    const Device& device() const { return device_; }
    MemoryStats stats() const { return stats_; }
    VkDeviceSize block_size() const { return block_size_; }

private:
    friend class Buffer;
    Allocation allocate(const VkMemoryRequirements& req, MemoryKind kind, const std::string& name);
    void free(const Allocation& a) noexcept;
    std::uint32_t memory_type(std::uint32_t type_bits, MemoryKind kind, const std::string& name) const;
    struct Block* new_block(std::uint32_t type, VkDeviceSize size, const std::string& name);

    const Device& device_;
    VkDeviceSize block_size_;
    VkPhysicalDeviceMemoryProperties props_{};
    std::vector<std::unique_ptr<struct Block>> blocks_;
    MemoryStats stats_;
};

}  // namespace vkf
