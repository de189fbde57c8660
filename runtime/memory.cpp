// The sub-allocator: blocks of VkDeviceMemory, their free ranges, and where a buffer goes
// when device-local memory is full. Budgets are memory_budget.cpp, Buffer memory_buffer.cpp.
#include "runtime/memory.hpp"

#include "base/error.hpp"
#include "runtime/memory_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>

namespace vkf {

std::string memory_detail::mib(std::uint64_t bytes) {
    return fmt::format("{:.1f} MiB ({} bytes)", static_cast<double>(bytes) / (1 << 20), bytes);
}

namespace {

using memory_detail::find_fallback_type;
using memory_detail::find_type;
using memory_detail::kHostCoherent;
using memory_detail::mib;

VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) {
    return (v + a - 1) / a * a;
}

// A block size for a buffer of `need` bytes within `room`: `want`, halved while it does not
// fit and half still holds the buffer, else the buffer's own size; 0 when even that does
// not fit.
VkDeviceSize fitting_block(VkDeviceSize want, VkDeviceSize need, std::uint64_t room) {
    if (need > room) {
        return 0;
    }
    VkDeviceSize size = want;
    while (size > room && size / 2 >= need) {
        size /= 2;
    }
    return size <= room ? size : need;
}

// The first free range of `b` that holds `size` bytes at `alignment`.
std::optional<Allocation> take(Block& b, VkDeviceSize size, VkDeviceSize alignment) {
    for (auto it = b.free_ranges.begin(); it != b.free_ranges.end(); ++it) {
        const VkDeviceSize start = align_up(it->first, alignment);
        const VkDeviceSize end = it->first + it->second;
        if (start + size > end) {
            continue;
        }
        const VkDeviceSize range_offset = it->first;
        b.free_ranges.erase(it);
        if (start > range_offset)
            b.free_ranges.emplace(range_offset, start - range_offset);
        if (start + size < end)
            b.free_ranges.emplace(start + size, end - start - size);
        b.live += 1;
        return Allocation{.block = &b, .offset = start, .size = size};
    }
    return std::nullopt;
}

}  // namespace

MemoryAllocator::MemoryAllocator(const Device& device, VkDeviceSize block_size, MemoryCaps caps)
    : device_(device), caps_(caps) {
    vkGetPhysicalDeviceMemoryProperties(device.physical(), &props_);
    heap_bytes_.assign(props_.memoryHeapCount, 0);
    VkDeviceSize smallest_heap = UINT64_MAX;
    for (std::uint32_t h = 0; h < props_.memoryHeapCount; ++h) {
        smallest_heap = std::min(smallest_heap, props_.memoryHeaps[h].size);
    }
    // A block must fit the driver's allocation limit and leave room in small heaps, forced
    // ones included.
    block_size_ = std::min({block_size, smallest_heap / 4, device.info().max_memory_allocation_size});
    for (const std::optional<std::uint64_t>& cap : {caps_.device_local, caps_.host_visible}) {
        if (cap) {
            block_size_ = std::min<VkDeviceSize>(block_size_, *cap / 4);
        }
    }
    block_size_ = std::max<VkDeviceSize>(block_size_, 1 << 20);
}

MemoryAllocator::~MemoryAllocator() {
    // After a timeout, buffers released since are waiting for the device to be idle, and
    // they return their memory to this allocator: let them before the blocks go.
    if (device_.lost()) {
        device_.wait_idle_and_release();
    }
    for (auto& b : blocks_) {
        if (b->mapped != nullptr) {
            vkUnmapMemory(device_.handle(), b->memory);
        }
        vkFreeMemory(device_.handle(), b->memory, nullptr);
    }
}

std::uint32_t MemoryAllocator::memory_type(std::uint32_t type_bits, MemoryKind kind, const std::string& name) const {
    const std::uint32_t type = find_type(props_, type_bits, kind);
    if (type == UINT32_MAX) {
        throw Error("buffer '" + name + "': the device has no " +
                    (kind == MemoryKind::Host ? "host-visible coherent" : "usable") + " memory type for it");
    }
    return type;
}

MemoryStats MemoryAllocator::stats() const {
    const std::lock_guard lock(mutex_);
    return stats_;
}

void MemoryAllocator::inject_faults(std::optional<AllocationFaults> faults) {
    const std::lock_guard lock(mutex_);
    faults_ = faults;
    requests_ = 0;
}

VkResult MemoryAllocator::injected_result() {
    const std::lock_guard lock(mutex_);
    return injected_result_locked();
}

VkResult MemoryAllocator::injected_result_locked() {
    if (!faults_) {
        return VK_SUCCESS;
    }
    const std::uint64_t n = requests_++;
    const bool fail = n >= faults_->after && n - faults_->after < faults_->count;
    return fail ? VK_ERROR_OUT_OF_DEVICE_MEMORY : VK_SUCCESS;
}

Block* MemoryAllocator::new_block(std::uint32_t type, VkDeviceSize size, const std::string& name,
                                  VkDeviceSize buffer_size, BlockUse use, bool may_fail) {
    const DeviceInfo& info = device_.info();
    if (size > info.max_memory_allocation_size) {
        throw Error("buffer '" + name + "' needs " + fmt::to_string(size) +
                    " bytes in one allocation, over the device's maxMemoryAllocationSize of " +
                    fmt::to_string(info.max_memory_allocation_size) + " bytes; split the tensor");
    }
    if (stats_.block_count + 1 > info.max_memory_allocation_count) {
        throw Error("buffer '" + name + "': the device's maxMemoryAllocationCount (" +
                    fmt::to_string(info.max_memory_allocation_count) + ") is reached");
    }
    auto block = std::make_unique<Block>();
    block->size = size;
    block->type = type;
    block->fallback = use == BlockUse::Fallback;
    block->host = use == BlockUse::Host;
    const VkMemoryAllocateInfo alloc{
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = size, .memoryTypeIndex = type};
    VkResult r = injected_result_locked();
    if (r == VK_SUCCESS) {
        r = vkAllocateMemory(device_.handle(), &alloc, nullptr, &block->memory);
    }
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        if (may_fail) {
            return nullptr;
        }
        throw OutOfMemoryError("out of device memory: buffer '" + name + "' (" + mib(buffer_size) +
                               "): allocating a block of " + mib(size) + " failed with " + to_string(r) + " (" +
                               mib(stats_.block_bytes) + " already allocated by vkformer)");
    }
    check(r, "vkAllocateMemory");
    // Only coherent memory is mapped: vkformer never flushes or invalidates by hand.
    if ((props_.memoryTypes[type].propertyFlags & kHostCoherent) == kHostCoherent) {
        void* p = nullptr;
        const VkResult m = vkMapMemory(device_.handle(), block->memory, 0, VK_WHOLE_SIZE, 0, &p);
        if (m != VK_SUCCESS) {
            vkFreeMemory(device_.handle(), block->memory, nullptr);
            check(m, "vkMapMemory");
        }
        block->mapped = static_cast<std::byte*>(p);
    }
    block->free_ranges.emplace(0, size);
    stats_.block_bytes += size;
    stats_.block_count += 1;
    heap_bytes_[props_.memoryTypes[type].heapIndex] += size;
    if (use == BlockUse::Fallback) {
        stats_.fallback_block_bytes += size;
    } else if (use == BlockUse::Device &&
               (props_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0) {
        stats_.device_local_block_bytes += size;
    }
    blocks_.push_back(std::move(block));
    return blocks_.back().get();
}

std::optional<Allocation> MemoryAllocator::from_blocks(const VkMemoryRequirements& req, std::uint32_t type,
                                                       BlockUse use) {
    // Binding offsets must also be multiples of the storage-buffer alignment.
    const VkDeviceSize alignment =
        std::max<VkDeviceSize>(req.alignment, device_.info().min_storage_buffer_offset_alignment);
    for (auto& b : blocks_) {
        // Host buffers share the Device blocks of their type too (unified memory): no block
        // of their own for a few small buffers.
        const bool usable =
            use == BlockUse::Fallback ? b->fallback : !b->fallback && (!b->host || use == BlockUse::Host);
        if (b->type == type && !b->dedicated && usable) {
            if (auto got = take(*b, req.size, alignment)) {
                return got;
            }
        }
    }
    return std::nullopt;
}

Allocation MemoryAllocator::allocate_device(const VkMemoryRequirements& req, std::uint32_t type,
                                            const std::string& name) {
    const bool dedicated = req.size > block_size_ / 2;
    if (!dedicated) {
        if (auto got = from_blocks(req, type, BlockUse::Device)) {
            return *got;
        }
    }
    const VkDeviceSize want = dedicated ? req.size : block_size_;
    const MemoryBudget now = budget(req.memoryTypeBits);
    const auto placed = [&](Block* b) {
        b->dedicated = dedicated;
        return *take(*b, req.size, 1);  // a new block's one free range starts at 0
    };
    // Device-local memory while its heap's budget (and the cap) has room for the block.
    bool out_of_memory = false;
    if (const VkDeviceSize size = fitting_block(want, req.size, now.device_local_available)) {
        if (Block* b = new_block(type, size, name, req.size, BlockUse::Device, true)) {
            return placed(b);
        }
        out_of_memory = true;
    }
    // Host-visible memory next: room left in fallback blocks, else a new one within its budget.
    const std::uint32_t fallback = find_fallback_type(props_, req.memoryTypeBits, type);
    std::optional<Allocation> got;
    if (fallback != UINT32_MAX && !dedicated) {
        got = from_blocks(req, fallback, BlockUse::Fallback);
    }
    if (!got && fallback != UINT32_MAX && now.host_visible_available >= req.size) {
        got = placed(new_block(fallback, fitting_block(want, req.size, now.host_visible_available), name, req.size,
                               BlockUse::Fallback));
    }
    if (!got) {
        if (now.caps.device_local || now.caps.host_visible) {
            // Forced sizes are hard limits: they stand for a device that has no more.
            throw OutOfMemoryError("out of device memory: buffer '" + name + "' needs " + mib(req.size) + " but only " +
                                   mib(now.device_local_available) + " of device-local and " +
                                   mib(now.host_visible_available) + " of host-visible memory are left (" +
                                   now.source() + ")");
        }
        // Nowhere else to go: the device-local heap as before, and the driver's verdict (a
        // budget is advice; an allocation past it may still succeed).
        return placed(new_block(type, want, name, req.size, BlockUse::Device));
    }
    if (stats_.note.empty()) {
        const std::uint32_t heap = props_.memoryTypes[type].heapIndex;
        std::string why;
        if (out_of_memory) {
            why = "vkAllocateMemory of a block there failed for lack of memory";
        } else if (now.caps.device_local) {
            why = "it had " + mib(now.device_local_available) +
                  " left of the forced size VKF_LIMITS device_heap=" + fmt::to_string(*now.caps.device_local);
        } else {
            why = "it had " + mib(now.device_local_available) + " left: budget " + mib(now.heaps[heap].budget) +
                  ", in use " + mib(now.heaps[heap].usage) + " (" + now.source() + ")";
        }
        stats_.note = "device-local memory (heap " + fmt::to_string(heap) + ") is full (" + why + "): from buffer '" +
                      name + "' (" + mib(req.size) + ") on, device buffers that do not fit it " +
                      "go to host-visible memory (heap " + fmt::to_string(props_.memoryTypes[fallback].heapIndex) +
                      "), which the GPU reads more slowly";
    }
    return *got;
}

Allocation MemoryAllocator::allocate(const VkMemoryRequirements& req, MemoryKind kind, const std::string& name) {
    const std::lock_guard lock(mutex_);
    const std::uint32_t type = memory_type(req.memoryTypeBits, kind, name);
    Allocation a;
    if (kind == MemoryKind::Device) {
        a = allocate_device(req, type, name);
    } else if (req.size > block_size_ / 2) {
        Block* b = new_block(type, req.size, name, req.size, BlockUse::Host);
        b->dedicated = true;
        a = *take(*b, req.size, 1);
    } else if (auto got = from_blocks(req, type, BlockUse::Host)) {
        a = *got;
    } else {
        a = *take(*new_block(type, block_size_, name, req.size, BlockUse::Host), req.size, 1);
    }
    stats_.buffer_bytes += a.size;
    stats_.buffer_count += 1;
    if (a.block->fallback) {
        stats_.fallback_buffer_bytes += a.size;
        stats_.fallback_buffer_count += 1;
    }
    return a;
}

void MemoryAllocator::free(const Allocation& a) noexcept {
    const std::lock_guard lock(mutex_);
    Block& b = *a.block;
    stats_.buffer_bytes -= a.size;
    stats_.buffer_count -= 1;
    if (b.fallback) {
        stats_.fallback_buffer_bytes -= a.size;
        stats_.fallback_buffer_count -= 1;
    }
    auto [it, inserted] = b.free_ranges.emplace(a.offset, a.size);
    (void)inserted;
    // Coalesce with the following and preceding free ranges.
    if (auto next = std::next(it); next != b.free_ranges.end() && it->first + it->second == next->first) {
        it->second += next->second;
        b.free_ranges.erase(next);
    }
    if (it != b.free_ranges.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second == it->first) {
            prev->second += it->second;
            b.free_ranges.erase(it);
        }
    }
    b.live -= 1;
    // Dedicated blocks go back at once; one empty shared block per memory type is kept so
    // that creating and dropping small buffers does not churn vkAllocateMemory. Fallback
    // blocks go back at once too: later buffers should find device-local memory first. (One
    // empty block is kept per memory type and use: Device or Host.)
    if (b.live == 0) {
        const bool keep =
            !b.dedicated && !b.fallback && std::count_if(blocks_.begin(), blocks_.end(), [&](const auto& other) {
                                               return other.get() != &b && other->type == b.type && !other->dedicated &&
                                                      !other->fallback && other->host == b.host && other->live == 0;
                                           }) == 0;
        if (!keep) {
            if (b.mapped != nullptr) {
                vkUnmapMemory(device_.handle(), b.memory);
            }
            vkFreeMemory(device_.handle(), b.memory, nullptr);
            stats_.block_bytes -= b.size;
            stats_.block_count -= 1;
            heap_bytes_[props_.memoryTypes[b.type].heapIndex] -= b.size;
            if (b.fallback) {
                stats_.fallback_block_bytes -= b.size;
            } else if (!b.host &&
                       (props_.memoryTypes[b.type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0) {
                stats_.device_local_block_bytes -= b.size;
            }
            blocks_.erase(std::find_if(blocks_.begin(), blocks_.end(), [&](const auto& p) { return p.get() == &b; }));
        }
    }
}

}  // namespace vkf
