#pragma once
// Descriptor sets from pools that grow on demand: when a pool is full, another is made.
// Capacity is counted here rather than left to VK_ERROR_OUT_OF_POOL_MEMORY, which some
// drivers (lavapipe) never return.

#include "runtime/device.hpp"

#include <vector>

namespace vkf {

class DescriptorAllocator {
public:
    explicit DescriptorAllocator(const Device& device, std::uint32_t sets_per_pool = 64);
    ~DescriptorAllocator();
    DescriptorAllocator(const DescriptorAllocator&) = delete;
    DescriptorAllocator& operator=(const DescriptorAllocator&) = delete;

    // `descriptors`: the storage-buffer bindings of the layout.
    VkDescriptorSet allocate(VkDescriptorSetLayout layout, std::uint32_t descriptors);
    std::size_t pool_count() const { return pools_.size(); }

private:
    void add_pool(std::uint32_t min_descriptors);

    const Device& device_;
    std::uint32_t sets_per_pool_;
    std::vector<VkDescriptorPool> pools_;
    std::uint32_t sets_left_ = 0;
    std::uint32_t descriptors_left_ = 0;
};

}  // namespace vkf
