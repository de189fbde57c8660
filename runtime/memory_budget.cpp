// Memory types, heaps and budgets: which memory type a kind of buffer gets, what each heap
// has left (VK_EXT_memory_budget or the heap sizes) and what Device buffers can still get
// under MemoryCaps.
#include "runtime/memory.hpp"

#include "runtime/memory_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace vkf {
namespace {

std::uint64_t minus(std::uint64_t a, std::uint64_t b) {
    return a > b ? a - b : 0;
}

bool usable(VkMemoryPropertyFlags f) {
    return (f & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)) == 0;
}

}  // namespace

std::uint32_t memory_detail::find_type(const VkPhysicalDeviceMemoryProperties& props, std::uint32_t type_bits,
                                       MemoryKind kind) {
    const VkMemoryPropertyFlags required = kind == MemoryKind::Host ? kHostCoherent : 0;
    const VkMemoryPropertyFlags preferred =
        kind == MemoryKind::Host ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    std::uint32_t best = UINT32_MAX;
    for (std::uint32_t t = 0; t < props.memoryTypeCount; ++t) {
        const VkMemoryPropertyFlags f = props.memoryTypes[t].propertyFlags;
        if (!(type_bits & (1u << t)) || (f & required) != required || !usable(f)) {
            continue;
        }
        if (best == UINT32_MAX ||
            ((f & preferred) == preferred && (props.memoryTypes[best].propertyFlags & preferred) != preferred)) {
            best = t;
        }
    }
    return best;
}

std::uint32_t memory_detail::find_fallback_type(const VkPhysicalDeviceMemoryProperties& props, std::uint32_t type_bits,
                                                std::uint32_t device_type) {
    const std::uint32_t device_heap = props.memoryTypes[device_type].heapIndex;
    const auto rank = [&](std::uint32_t t) {
        const std::uint32_t heap = props.memoryTypes[t].heapIndex;
        if (heap == device_heap) {
            return 1;
        }
        return (props.memoryHeaps[heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0 ? 2 : 3;
    };
    std::uint32_t best = UINT32_MAX;
    for (std::uint32_t t = 0; t < props.memoryTypeCount; ++t) {
        const VkMemoryPropertyFlags f = props.memoryTypes[t].propertyFlags;
        if ((type_bits & (1u << t)) && (f & kHostCoherent) == kHostCoherent && usable(f) &&
            (best == UINT32_MAX || rank(t) > rank(best))) {
            best = t;
        }
    }
    return best;
}

namespace {

using memory_detail::find_fallback_type;
using memory_detail::find_type;

// Every heap's budget and usage: VK_EXT_memory_budget's, else the heap's size and `own`
// (vkformer's blocks per heap; empty: none).
MemoryBudget read_heaps(VkPhysicalDevice physical, bool use_extension, const std::vector<std::uint64_t>& own) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT ext{.sType =
                                                      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 props{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                            .pNext = use_extension ? &ext : nullptr};
    vkGetPhysicalDeviceMemoryProperties2(physical, &props);
    const VkPhysicalDeviceMemoryProperties& mem = props.memoryProperties;
    MemoryBudget out{.from_extension = use_extension};
    for (std::uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
        HeapBudget heap{.index = h,
                        .size = mem.memoryHeaps[h].size,
                        .device_local = (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0};
        for (std::uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
            if (mem.memoryTypes[t].heapIndex == h &&
                (mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0) {
                heap.host_visible = true;
            }
        }
        // The specification has heapBudget non-zero for every heap; a driver that says 0
        // gets its heap's size rather than a budget nothing fits in.
        heap.budget = use_extension && ext.heapBudget[h] != 0 ? ext.heapBudget[h] : heap.size;
        heap.usage = use_extension ? ext.heapUsage[h] : (h < own.size() ? own[h] : 0);
        out.heaps.push_back(heap);
    }
    return out;
}

// Fills in what Device buffers of `type_bits` can still get, given vkformer's device-local
// and fallback block bytes (what the caps count).
void fill_available(MemoryBudget& b, const VkPhysicalDeviceMemoryProperties& props, std::uint32_t type_bits,
                    std::uint64_t device_local_bytes, std::uint64_t fallback_bytes) {
    const std::uint32_t type = find_type(props, type_bits, MemoryKind::Device);
    if (type == UINT32_MAX) {
        return;
    }
    const HeapBudget& heap = b.heaps.at(props.memoryTypes[type].heapIndex);
    const bool device_local = (props.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
    const std::uint64_t heap_room = minus(heap.budget, heap.usage);
    const bool capped = device_local && b.caps.device_local.has_value();
    b.device_local_available =
        capped ? std::min(heap_room, minus(*b.caps.device_local, device_local_bytes)) : heap_room;
    b.host_visible_available = 0;
    const std::uint32_t fallback = find_fallback_type(props, type_bits, type);
    if (fallback == UINT32_MAX) {
        return;
    }
    const HeapBudget& fallback_heap = b.heaps.at(props.memoryTypes[fallback].heapIndex);
    if (fallback_heap.index != heap.index) {
        b.host_visible_available = minus(fallback_heap.budget, fallback_heap.usage);
    } else if (capped) {
        // One heap for both (unified memory): what the device-local cap leaves of it.
        b.host_visible_available = heap_room - b.device_local_available;
    }
    if (b.caps.host_visible) {
        b.host_visible_available = std::min(b.host_visible_available, minus(*b.caps.host_visible, fallback_bytes));
    }
}

}  // namespace

std::string MemoryBudget::source() const {
    std::string out = from_extension ? "VK_EXT_memory_budget" : "heap sizes";
    std::string forced;
    if (caps.device_local) {
        forced = "device_heap=" + fmt::to_string(*caps.device_local);
    }
    if (caps.host_visible) {
        forced += (forced.empty() ? "" : ",") + std::string("host_heap=") + fmt::to_string(*caps.host_visible);
    }
    return forced.empty() ? out : out + "; forced: VKF_LIMITS " + forced;
}

MemoryBudget query_memory_budget(VkPhysicalDevice physical, bool use_extension, const MemoryCaps& caps) {
    MemoryBudget b = read_heaps(physical, use_extension, {});
    b.caps = caps;
    VkPhysicalDeviceMemoryProperties props{};
    vkGetPhysicalDeviceMemoryProperties(physical, &props);
    fill_available(b, props, UINT32_MAX, 0, 0);
    return b;
}

MemoryBudget MemoryAllocator::budget(std::uint32_t type_bits) const {
    MemoryBudget b = read_heaps(device_.physical(), device_.info().memory_budget, heap_bytes_);
    b.caps = caps_;
    fill_available(b, props_, type_bits, stats_.device_local_block_bytes, stats_.fallback_block_bytes);
    return b;
}

MemoryBudget MemoryAllocator::budget() const {
    const std::lock_guard lock(mutex_);
    return budget(UINT32_MAX);
}

}  // namespace vkf
