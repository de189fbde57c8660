/* vkf_context_create adopting the application's own Vulkan objects: the test creates an
 * instance, a device (no optional feature) and a compute queue itself through volk, hands them
 * over, generates a few tokens on them, frees vkformer's handles and then destroys its own
 * objects (which vkformer must not have destroyed).
 * usage: test_capi_adopt MODEL_DIR */
#include "check.h"

#include <volk.h>

#include <stdlib.h>

int main(int argc, char** argv) {
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t count = 1, families = 0, family = UINT32_MAX;
    VkQueueFamilyProperties props[16];
    float priority = 1.0f;
    vkf_context* ctx = NULL;
    vkf_model* model = NULL;
    vkf_session* session = NULL;
    vkf_device_info info;
    vkf_context_params p = vkf_context_default_params();
    vkf_generate_params gp = vkf_generate_default_params();
    vkf_generate_result result;
    const uint32_t prompt[3] = {10, 20, 30};
    if (argc != 2) {
        fprintf(stderr, "usage: test_capi_adopt MODEL_DIR\n");
        return 2;
    }
    if (volkInitialize() != VK_SUCCESS) {
        fprintf(stderr, "test_capi_adopt: no Vulkan loader\n");
        return 1;
    }
    {
        VkApplicationInfo app = {
            VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "test_capi_adopt", 1, NULL, 0, VK_API_VERSION_1_1};
        VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 0, NULL};
        CHECK(vkCreateInstance(&ici, NULL, &instance) == VK_SUCCESS);
    }
    volkLoadInstance(instance);
    CHECK(vkEnumeratePhysicalDevices(instance, &count, &physical) >= VK_SUCCESS && count == 1);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, NULL);
    families = families > 16 ? 16 : families;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, props);
    for (uint32_t i = 0; i < families && family == UINT32_MAX; i++) {
        if (props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            family = i;
        }
    }
    CHECK(family != UINT32_MAX);
    {
        VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, family, 1, &priority};
        VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &qci, 0, NULL, 0, NULL, NULL};
        CHECK(vkCreateDevice(physical, &dci, NULL, &device) == VK_SUCCESS);
    }
    vkGetDeviceQueue(device, family, 0, &queue);

    p.vk_instance = instance;
    p.vk_api_version = VK_API_VERSION_1_1;
    p.vk_physical_device = physical;
    p.vk_device = device;
    p.vk_queue = queue;
    p.vk_queue_family = family;
    EXPECT_OK(vkf_context_create(&p, &ctx));
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_OK(vkf_context_get_device_info(ctx, &info));
    CHECK(!info.fp16_storage && !info.fp16_arithmetic); /* nothing optional was enabled */
    EXPECT_OK(vkf_model_load(ctx, argv[1], NULL, &model));
    EXPECT_OK(vkf_session_create(model, NULL, &session));
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    gp.max_new_tokens = 4;
    gp.use_model_eos = 0;
    EXPECT_OK(vkf_generate(session, prompt, 3, &gp, NULL, 0, &result));
    CHECK(result.n_tokens == 4);
    EXPECT_OK(vkf_session_free(session));
    EXPECT_OK(vkf_model_free(model));
    EXPECT_OK(vkf_context_free(ctx));
    /* Still the application's: these succeed only if vkformer left them alive. */
    CHECK(vkDeviceWaitIdle(device) == VK_SUCCESS);
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    if (check_failures != 0) {
        fprintf(stderr, "test_capi_adopt: %d checks failed\n", check_failures);
        return 1;
    }
    printf("test_capi_adopt: all checks passed\n");
    return 0;
}
