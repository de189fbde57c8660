#pragma once
// Descriptor sets from pools that grow on demand: when a pool runs out, another is made.

#include "runtime/vk.hpp"

#include <vector>

namespace vkf {

class DescriptorAllocator {
public:
    explicit DescriptorAllocator(VkDevice device, std::uint32_t sets_per_pool = 64);
    ~DescriptorAllocator();
    DescriptorAllocator(const DescriptorAllocator&) = delete;
    DescriptorAllocator& operator=(const DescriptorAllocator&) = delete;

    VkDescriptorSet allocate(VkDescriptorSetLayout layout);
    std::size_t pool_count() const { return pools_.size(); }

private:
    void add_pool();

    VkDevice device_;
    std::uint32_t sets_per_pool_;
    std::vector<VkDescriptorPool> pools_;
};

} // namespace vkf
