#include "runtime/memory.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace vkf {

struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    std::uint32_t type = 0;
    std::byte* mapped = nullptr;
    bool dedicated = false;
    std::map<VkDeviceSize, VkDeviceSize> free_ranges;  // offset -> size, coalesced
    std::uint32_t live = 0;
};

namespace {

VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) {
    return (v + a - 1) / a * a;
}

}  // namespace

MemoryAllocator::MemoryAllocator(const Device& device, VkDeviceSize block_size) : device_(device) {
    vkGetPhysicalDeviceMemoryProperties(device.physical(), &props_);
    VkDeviceSize smallest_heap = UINT64_MAX;
    for (std::uint32_t h = 0; h < props_.memoryHeapCount; ++h) {
        smallest_heap = std::min(smallest_heap, props_.memoryHeaps[h].size);
    }
    // A block must fit the driver's allocation limit and leave room in small heaps.
    block_size_ = std::min({block_size, smallest_heap / 4, device.info().max_memory_allocation_size});
    block_size_ = std::max<VkDeviceSize>(block_size_, 1 << 20);
}

MemoryAllocator::~MemoryAllocator() {
    for (auto& b : blocks_) {
        if (b->mapped != nullptr) {
            vkUnmapMemory(device_.handle(), b->memory);
        }
        vkFreeMemory(device_.handle(), b->memory, nullptr);
    }
}

std::uint32_t MemoryAllocator::memory_type(std::uint32_t type_bits, MemoryKind kind, const std::string& name) const {
    const VkMemoryPropertyFlags required =
        kind == MemoryKind::Host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
    const VkMemoryPropertyFlags preferred =
        kind == MemoryKind::Host ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    std::uint32_t best = UINT32_MAX;
    for (std::uint32_t t = 0; t < props_.memoryTypeCount; ++t) {
        const VkMemoryPropertyFlags f = props_.memoryTypes[t].propertyFlags;
        if (!(type_bits & (1u << t)) || (f & required) != required) {
            continue;
        }
        if (f & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)) {
            continue;
        }
        if (best == UINT32_MAX ||
            ((f & preferred) == preferred && (props_.memoryTypes[best].propertyFlags & preferred) != preferred)) {
            best = t;
        }
    }
    if (best == UINT32_MAX) {
        throw Error("buffer '" + name + "': the device has no " +
                    (kind == MemoryKind::Host ? "host-visible coherent" : "usable") + " memory type for it");
    }
    return best;
}

Block* MemoryAllocator::new_block(std::uint32_t type, VkDeviceSize size, const std::string& name) {
    const DeviceInfo& info = device_.info();
    if (size > info.max_memory_allocation_size) {
        throw Error("buffer '" + name + "' needs " + std::to_string(size) +
                    " bytes in one allocation, over the device's maxMemoryAllocationSize of " +
                    std::to_string(info.max_memory_allocation_size) + " bytes; split the tensor");
    }
    if (stats_.block_count + 1 > info.max_memory_allocation_count) {
        throw Error("buffer '" + name + "': the device's maxMemoryAllocationCount (" +
                    std::to_string(info.max_memory_allocation_count) + ") is reached");
    }
    auto block = std::make_unique<Block>();
    block->size = size;
    block->type = type;
    const VkMemoryAllocateInfo alloc{
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = size, .memoryTypeIndex = type};
    const VkResult r = vkAllocateMemory(device_.handle(), &alloc, nullptr, &block->memory);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        throw Error("out of device memory: allocating " + std::to_string(size) + " bytes for buffer '" + name +
                    "' failed with " + to_string(r) + " (" + std::to_string(stats_.block_bytes) +
                    " bytes already allocated by vkformer)");
    }
    check(r, "vkAllocateMemory");
    // Only coherent memory is mapped: vkformer never flushes or invalidates by hand.
    const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if ((props_.memoryTypes[type].propertyFlags & mappable) == mappable) {
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
    blocks_.push_back(std::move(block));
    return blocks_.back().get();
}

Allocation MemoryAllocator::allocate(const VkMemoryRequirements& req, MemoryKind kind, const std::string& name) {
    const std::uint32_t type = memory_type(req.memoryTypeBits, kind, name);
    // Binding offsets must also be multiples of the storage-buffer alignment.
    const VkDeviceSize alignment =
        std::max<VkDeviceSize>(req.alignment, device_.info().min_storage_buffer_offset_alignment);
    auto try_block = [&](Block& b) -> std::optional<Allocation> {
        for (auto it = b.free_ranges.begin(); it != b.free_ranges.end(); ++it) {
            const VkDeviceSize start = align_up(it->first, alignment);
            const VkDeviceSize end = it->first + it->second;
            if (start + req.size > end) {
                continue;
            }
            const VkDeviceSize range_offset = it->first;
            b.free_ranges.erase(it);
            if (start > range_offset)
                b.free_ranges.emplace(range_offset, start - range_offset);
            if (start + req.size < end)
                b.free_ranges.emplace(start + req.size, end - start - req.size);
            b.live += 1;
            return Allocation{.block = &b, .offset = start, .size = req.size};
        }
        return std::nullopt;
    };
    Allocation a;
    if (req.size > block_size_ / 2) {
        Block* b = new_block(type, req.size, name);
        b->dedicated = true;
        a = *try_block(*b);
    } else {
        for (auto& b : blocks_) {
            if (b->type == type && !b->dedicated) {
                if (auto got = try_block(*b)) {
                    a = *got;
                    break;
                }
            }
        }
        if (a.block == nullptr) {
            a = *try_block(*new_block(type, block_size_, name));
        }
    }
    stats_.buffer_bytes += a.size;
    stats_.buffer_count += 1;
    return a;
}

void MemoryAllocator::free(const Allocation& a) noexcept {
    Block& b = *a.block;
    stats_.buffer_bytes -= a.size;
    stats_.buffer_count -= 1;
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
    // that creating and dropping small buffers does not churn vkAllocateMemory.
    if (b.live == 0) {
        const bool keep = !b.dedicated && std::count_if(blocks_.begin(), blocks_.end(), [&](const auto& other) {
                                              return other.get() != &b && other->type == b.type && !other->dedicated &&
                                                     other->live == 0;
                                          }) == 0;
        if (!keep) {
            if (b.mapped != nullptr) {
                vkUnmapMemory(device_.handle(), b.memory);
            }
            vkFreeMemory(device_.handle(), b.memory, nullptr);
            stats_.block_bytes -= b.size;
            stats_.block_count -= 1;
            blocks_.erase(std::find_if(blocks_.begin(), blocks_.end(), [&](const auto& p) { return p.get() == &b; }));
        }
    }
}

Buffer::Buffer(MemoryAllocator& allocator, VkDeviceSize size, MemoryKind kind, std::string name)
    : allocator_(&allocator), size_(size), kind_(kind), name_(std::move(name)) {
    if (size == 0) {
        throw Error("buffer '" + name_ + "': size is 0");
    }
    const VkDevice dev = allocator.device().handle();
    const VkBufferCreateInfo info{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                  .size = size,
                                  .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                           VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                  .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    check(vkCreateBuffer(dev, &info, nullptr, &buffer_), "vkCreateBuffer");
    try {
        VkMemoryRequirements req{};
        vkGetBufferMemoryRequirements(dev, buffer_, &req);
        allocation_ = allocator.allocate(req, kind, name_);
        check(vkBindBufferMemory(dev, buffer_, allocation_.block->memory, allocation_.offset), "vkBindBufferMemory");
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

std::byte* Buffer::mapped() const {
    return allocation_.block != nullptr && allocation_.block->mapped != nullptr
               ? allocation_.block->mapped + allocation_.offset
               : nullptr;
}

void Buffer::release() noexcept {
    if (buffer_ != VK_NULL_HANDLE) {
        vkDestroyBuffer(allocator_->device().handle(), buffer_, nullptr);
        buffer_ = VK_NULL_HANDLE;
    }
    if (allocation_.block != nullptr) {
        allocator_->free(allocation_);
        allocation_ = Allocation{};
    }
}

}  // namespace vkf
