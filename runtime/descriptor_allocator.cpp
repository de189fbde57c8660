#include "runtime/descriptor_allocator.hpp"

#include <algorithm>

namespace vkf {

DescriptorAllocator::DescriptorAllocator(const Device& device, std::uint32_t sets_per_pool)
    : device_(device), sets_per_pool_(sets_per_pool) {}

DescriptorAllocator::~DescriptorAllocator() {
    if (pools_.empty()) {
        return;
    }
    // Sets of a submission that timed out may still be read: the device defers this then.
    device_.release([dev = device_.handle(), pools = std::move(pools_)]() noexcept {
        for (VkDescriptorPool pool : pools) {
            vkDestroyDescriptorPool(dev, pool, nullptr);
        }
    });
}

void DescriptorAllocator::add_pool(std::uint32_t min_descriptors) {
    // Kernels bind up to 8 storage buffers; sized so a pool rarely runs out of descriptors
    // before it runs out of sets.
    const std::uint32_t descriptors = std::max(sets_per_pool_ * 8, min_descriptors);
    const VkDescriptorPoolSize size{.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = descriptors};
    const VkDescriptorPoolCreateInfo info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = sets_per_pool_,
                                          .poolSizeCount = 1,
                                          .pPoolSizes = &size};
    VkDescriptorPool pool = VK_NULL_HANDLE;
    check(vkCreateDescriptorPool(device_.handle(), &info, nullptr, &pool), "vkCreateDescriptorPool");
    pools_.push_back(pool);
    sets_left_ = sets_per_pool_;
    descriptors_left_ = descriptors;
}

VkDescriptorSet DescriptorAllocator::allocate(VkDescriptorSetLayout layout, std::uint32_t descriptors) {
    if (pools_.empty() || sets_left_ == 0 || descriptors_left_ < descriptors) {
        add_pool(descriptors);
    }
    VkDescriptorSetAllocateInfo info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                     .descriptorPool = pools_.back(),
                                     .descriptorSetCount = 1,
                                     .pSetLayouts = &layout};
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkResult r = vkAllocateDescriptorSets(device_.handle(), &info, &set);
    if (r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL) {
        add_pool(descriptors);
        info.descriptorPool = pools_.back();
        r = vkAllocateDescriptorSets(device_.handle(), &info, &set);
    }
    check(r, "vkAllocateDescriptorSets");
    sets_left_ -= 1;
    descriptors_left_ -= descriptors;
    return set;
}

}  // namespace vkf
