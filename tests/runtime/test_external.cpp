// An application that owns its VkInstance, VkDevice, queue and command buffer hands them to
// vkformer; and descriptor pools grow when a list needs more sets than one pool holds.

#include "host/ops/elementwise.hpp"
#include "tests/support/vulkan_test.hpp"

namespace vkf::test {
namespace {

TEST(ExternalHandles, ContextAdoptsTheApplicationsDeviceAndRecordsIntoItsCommandBuffer) {
    load_vulkan_loader();
    const VkApplicationInfo app{.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_1};
    const VkInstanceCreateInfo instance_info{.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance instance = VK_NULL_HANDLE;
    ASSERT_EQ(vkCreateInstance(&instance_info, nullptr, &instance), VK_SUCCESS);
    volkLoadInstance(instance);
    std::uint32_t count = 1;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    const VkResult enumerated = vkEnumeratePhysicalDevices(instance, &count, &physical);
    ASSERT_TRUE(enumerated == VK_SUCCESS || enumerated == VK_INCOMPLETE);
    ASSERT_EQ(count, 1u);
    std::uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, props.data());
    std::uint32_t family = 0;
    while (family < families && !(props[family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        ++family;
    ASSERT_LT(family, families);
    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo queue_info{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                             .queueFamilyIndex = family,
                                             .queueCount = 1,
                                             .pQueuePriorities = &priority};
    const VkDeviceCreateInfo device_info{
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1, .pQueueCreateInfos = &queue_info};
    VkDevice device = VK_NULL_HANDLE;
    ASSERT_EQ(vkCreateDevice(physical, &device_info, nullptr, &device), VK_SUCCESS);
    VkQueue queue = VK_NULL_HANDLE;
    vkGetDeviceQueue(device, family, 0, &queue);

    {
        MessageSink sink;
        ContextOptions options = test_options(sink);
        options.external_instance = instance;
        options.external_api_version = VK_API_VERSION_1_1;
        options.external_device = ExternalDevice{
            .physical_device = physical, .device = device, .queue = queue, .queue_family = family, .enabled = {}};
        Context ctx(options);
        EXPECT_FALSE(ctx.limits().fp16_storage) << "features the application did not enable stay off";
        const std::uint32_t n = 5000;
        Buffer b = ctx.create_buffer(n * 4, MemoryKind::Device, "b");
        auto list = ctx.command_list();
        record_fill(ctx, *list, whole(b), 0xABCDu);

        // The application's own command buffer, submission and fence.
        VkCommandPool pool = VK_NULL_HANDLE;
        const VkCommandPoolCreateInfo pool_info{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                                .queueFamilyIndex = family};
        ASSERT_EQ(vkCreateCommandPool(device, &pool_info, nullptr, &pool), VK_SUCCESS);
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        const VkCommandBufferAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                                .commandPool = pool,
                                                .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                                .commandBufferCount = 1};
        ASSERT_EQ(vkAllocateCommandBuffers(device, &alloc, &cmd), VK_SUCCESS);
        const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        ASSERT_EQ(vkBeginCommandBuffer(cmd, &begin), VK_SUCCESS);
        list->encode_into(cmd);
        ASSERT_EQ(vkEndCommandBuffer(cmd), VK_SUCCESS);
        const VkSubmitInfo submit{
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
        ASSERT_EQ(vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE), VK_SUCCESS);
        ASSERT_EQ(vkQueueWaitIdle(queue), VK_SUCCESS);
        EXPECT_THROW(ctx.submit(*list), Error);  // encoded elsewhere: the context cannot submit it

        std::vector<std::uint32_t> out(n);
        ctx.download(b, std::span(out));
        for (std::uint32_t i = 0; i < n; ++i) {
            ASSERT_EQ(out[i], 0xABCDu) << i;
        }
        vkDestroyCommandPool(device, pool, nullptr);
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    // vkformer left the application's objects alive: they are still usable and destroyable.
    EXPECT_EQ(vkDeviceWaitIdle(device), VK_SUCCESS);
    vkDestroyDevice(device, nullptr);
    vkDestroyInstance(instance, nullptr);
}

class DescriptorPools : public VulkanTest {};

TEST_F(DescriptorPools, GrowWhenAListNeedsMoreSets) {
    std::vector<Buffer> buffers;
    auto list = ctx().command_list();
    for (int i = 0; i < 300; ++i) {
        buffers.push_back(ctx().create_buffer(256, MemoryKind::Device, "small"));
        record_fill(ctx(), *list, whole(buffers.back()), static_cast<std::uint32_t>(i));
    }
    ctx().submit(*list);
    EXPECT_GT(list->descriptor_pool_count(), 1u);
    for (int i = 0; i < 300; i += 37) {
        std::vector<std::uint32_t> out(64);
        ctx().download(buffers[static_cast<std::size_t>(i)], std::span(out));
        EXPECT_EQ(out[63], static_cast<std::uint32_t>(i));
    }
}

}  // namespace
}  // namespace vkf::test
