#pragma once
// Device memory: buffers are sub-allocated from large VkDeviceMemory blocks (one block per
// buffer only for buffers bigger than half a block), so maxMemoryAllocationCount (4096 on
// many drivers) is never the limit. Host-visible blocks stay mapped for their lifetime.
//
// Budgets: every new block is checked against what its heap has left, the budget
// VK_EXT_memory_budget reports where the device has it (what the process may use before the
// driver starts failing or paging) and the heap's size less vkformer's own blocks where not.
// Small device-local heaps: a MemoryKind::Device buffer whose block does not fit what the
// device-local heap has left (or whose vkAllocateMemory fails for lack of memory) goes to
// host-visible memory instead, slower for the GPU to read but working; MemoryStats counts
// these fallbacks and says why the first happened. MemoryCaps (VKF_LIMITS device_heap and
// host_heap) force smaller sizes, so that lavapipe's one large heap can play a small GPU.

#include "runtime/device.hpp"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
    // Of block_bytes: blocks made for MemoryKind::Device buffers in a device-local memory type
    // (what MemoryCaps::device_local counts), and blocks of Device buffers that fell back to
    // host-visible memory.
    std::uint64_t device_local_block_bytes = 0;
    std::uint64_t fallback_block_bytes = 0;
    // Live MemoryKind::Device buffers placed in host-visible memory because device-local
    // memory was full.
    std::uint64_t fallback_buffer_bytes = 0;
    std::uint32_t fallback_buffer_count = 0;
    // Why the first fallback happened (heaps, budgets, the buffer); empty when none has.
    std::string note;
};

// Forced sizes (VKF_LIMITS device_heap and host_heap): vkformer keeps its device-local
// blocks within `device_local` bytes and its fallback blocks within `host_visible` bytes, as
// if the heaps were that small. On a device whose device-local heap is also host-visible
// (lavapipe, phones) the rest of that heap then serves as the host-visible fallback.
struct MemoryCaps {
    std::optional<std::uint64_t> device_local;
    std::optional<std::uint64_t> host_visible;
};

struct HeapBudget {
    std::uint32_t index = 0;
    std::uint64_t size = 0;    // VkMemoryHeap::size
    std::uint64_t budget = 0;  // VK_EXT_memory_budget's heapBudget; the size without it
    std::uint64_t usage = 0;   // heapUsage (the whole process); without it, vkformer's own blocks
    bool device_local = false;
    bool host_visible = false;  // some memory type of the heap is host-visible
};

struct MemoryBudget {
    std::vector<HeapBudget> heaps;
    bool from_extension = false;  // budget and usage came from VK_EXT_memory_budget
    MemoryCaps caps;
    // Bytes MemoryKind::Device buffers can still get: in device-local memory (the heap of the
    // memory type they are given, within its budget and caps.device_local), and in the
    // host-visible memory they fall back to after that (within caps.host_visible; 0 on a
    // device whose only heap is the device-local one, unless caps.device_local is set).
    std::uint64_t device_local_available = 0;
    std::uint64_t host_visible_available = 0;
    std::uint64_t available() const { return device_local_available + host_visible_available; }
    // "VK_EXT_memory_budget" or "heap sizes", and the caps where set.
    std::string source() const;
};

// A physical device's budget before vkformer allocates anything (vkf-info): usage is the
// extension's, or 0 without it. `use_extension`: the device lists VK_EXT_memory_budget
// (DeviceInfo::memory_budget). A Context's own budget is Context::memory_budget().
MemoryBudget query_memory_budget(VkPhysicalDevice physical, bool use_extension, const MemoryCaps& caps = {});

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
    // A MemoryKind::Device buffer that went to host-visible memory: device-local memory was full.
    bool host_visible_fallback() const;

private:
    void release() noexcept;

    MemoryAllocator* allocator_ = nullptr;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    Allocation allocation_;
    VkDeviceSize size_ = 0;
    MemoryKind kind_ = MemoryKind::Device;
    std::string name_;
};

// A test hook (Context::inject_faults): device-memory requests fail on purpose, as if the
// driver returned VK_ERROR_OUT_OF_DEVICE_MEMORY. Requests are counted from when the faults are
// injected: every vkCreateBuffer and every vkAllocateMemory of a block is one.
struct AllocationFaults {
    std::uint64_t after = 0;           // requests that succeed first
    std::uint64_t count = UINT64_MAX;  // then this many fail (default: every later one)
};

// Thread-safe: buffers may be created and destroyed from several threads at once.
class MemoryAllocator {
public:
    explicit MemoryAllocator(const Device& device, VkDeviceSize block_size = 64ull << 20, MemoryCaps caps = {});
    ~MemoryAllocator();
    MemoryAllocator(const MemoryAllocator&) = delete;
    MemoryAllocator& operator=(const MemoryAllocator&) = delete;

    const Device& device() const { return device_; }
    MemoryStats stats() const;
    VkDeviceSize block_size() const { return block_size_; }
    // The heaps' budget and usage now, and what Device buffers can still get.
    MemoryBudget budget() const;
    // Tests only: from now on, fail requests as `faults` says (nullopt: none fail).
    void inject_faults(std::optional<AllocationFaults> faults);

private:
    friend class Buffer;
    Allocation allocate(const VkMemoryRequirements& req, MemoryKind kind, const std::string& name);
    void free(const Allocation& a) noexcept;
    // VK_ERROR_OUT_OF_DEVICE_MEMORY when an injected fault makes this request fail, else
    // VK_SUCCESS; counts the request. The locked variant for Buffer's vkCreateBuffer.
    VkResult injected_result();
    VkResult injected_result_locked();
    std::uint32_t memory_type(std::uint32_t type_bits, MemoryKind kind, const std::string& name) const;
    // What a block was made for: Device buffers (counted against MemoryCaps::device_local when
    // device-local), Host buffers, or Device buffers that fell back to host-visible memory.
    enum class BlockUse { Device, Host, Fallback };
    // A block of `size` bytes for buffer `name` of `buffer_size` bytes, or nullptr when
    // `may_fail` and the driver is out of memory.
    struct Block* new_block(std::uint32_t type, VkDeviceSize size, const std::string& name, VkDeviceSize buffer_size,
                            BlockUse use, bool may_fail = false);
    // Room for `req` in a block of `type` that buffers of `use` may share.
    std::optional<Allocation> from_blocks(const VkMemoryRequirements& req, std::uint32_t type, BlockUse use);
    Allocation allocate_device(const VkMemoryRequirements& req, std::uint32_t type, const std::string& name);
    MemoryBudget budget(std::uint32_t type_bits) const;

    const Device& device_;
    VkDeviceSize block_size_;
    MemoryCaps caps_;
    VkPhysicalDeviceMemoryProperties props_{};
    // Guards everything below; private functions other than injected_result() expect it held.
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<struct Block>> blocks_;
    std::vector<std::uint64_t> heap_bytes_;  // vkformer's blocks per heap
    MemoryStats stats_;
    std::optional<AllocationFaults> faults_;
    std::uint64_t requests_ = 0;  // since the faults were injected
};

}  // namespace vkf
