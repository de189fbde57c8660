#pragma once
// What the device-memory files share (runtime/memory.cpp: the sub-allocator,
// memory_budget.cpp: memory types, heaps and budgets, memory_buffer.cpp: Buffer): the block
// buffers are carved from and the choice of memory types. Not part of the API.

#include "runtime/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace vkf {

struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    std::uint32_t type = 0;
    std::byte* mapped = nullptr;
    bool dedicated = false;
    bool fallback = false;  // holds MemoryKind::Device buffers in host-visible memory
    // Made for a MemoryKind::Host buffer: also holds later Host buffers, never Device ones,
    // and is not counted against MemoryCaps::device_local even when its type is device-local.
    bool host = false;
    std::map<VkDeviceSize, VkDeviceSize> free_ranges;  // offset -> size, coalesced
    std::uint32_t live = 0;
};

namespace memory_detail {

inline constexpr VkMemoryPropertyFlags kHostCoherent =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

// The memory type of a kind's buffers; UINT32_MAX when none qualifies.
std::uint32_t find_type(const VkPhysicalDeviceMemoryProperties& props, std::uint32_t type_bits, MemoryKind kind);

// Where MemoryKind::Device buffers go when device-local memory is full: a host-visible
// coherent type, best on a heap of its own that is not device-local (system memory next to
// a discrete GPU), then on any other heap, then on the device type's own heap (unified
// memory: a fallback only under MemoryCaps::device_local). UINT32_MAX when there is none.
std::uint32_t find_fallback_type(const VkPhysicalDeviceMemoryProperties& props, std::uint32_t type_bits,
                                 std::uint32_t device_type);

// "1.5 MiB (1572864 bytes)", for messages.
std::string mib(std::uint64_t bytes);

}  // namespace memory_detail
}  // namespace vkf
