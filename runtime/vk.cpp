#include "runtime/vk.hpp"

#include "runtime/error.hpp"

#include <mutex>

namespace vkf {

const char* to_string(VkResult result) {
    switch (result) {
#define VKF_CASE(x) \
    case x:         \
        return #x;
        VKF_CASE(VK_SUCCESS)
        VKF_CASE(VK_NOT_READY)
        VKF_CASE(VK_TIMEOUT)
        VKF_CASE(VK_EVENT_SET)
        VKF_CASE(VK_EVENT_RESET)
        VKF_CASE(VK_INCOMPLETE)
        VKF_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        VKF_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        VKF_CASE(VK_ERROR_INITIALIZATION_FAILED)
        VKF_CASE(VK_ERROR_DEVICE_LOST)
        VKF_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        VKF_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        VKF_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        VKF_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        VKF_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        VKF_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        VKF_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        VKF_CASE(VK_ERROR_FRAGMENTED_POOL)
        VKF_CASE(VK_ERROR_UNKNOWN)
        VKF_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        VKF_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        VKF_CASE(VK_ERROR_FRAGMENTATION)
        VKF_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        VKF_CASE(VK_PIPELINE_COMPILE_REQUIRED)
        VKF_CASE(VK_ERROR_VALIDATION_FAILED_EXT)
#undef VKF_CASE
    default:
        return "VkResult(unknown)";
    }
}

void check(VkResult result, const char* call) {
    if (result == VK_SUCCESS) {
        return;
    }
    std::string message = std::string(call) + " failed: " + to_string(result) + " (" +
                           std::to_string(static_cast<int>(result)) + ")";
    if (result == VK_ERROR_DEVICE_LOST) {
        throw DeviceLostError(message + "; the GPU reset or the driver gave up on this device");
    }
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY) {
        message += "; the device has no memory left for this request";
    }
    throw Error(message);
}

void load_vulkan_loader() {
    static std::once_flag once;
    static VkResult result = VK_SUCCESS;
    std::call_once(once, [] { result = volkInitialize(); });
    if (result != VK_SUCCESS) {
        throw Error("cannot open the Vulkan loader (libvulkan.so.1): install libvulkan1 and a Vulkan "
                    "driver, e.g. mesa-vulkan-drivers for the CPU driver lavapipe");
    }
}

std::string format_version(std::uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
           "." + std::to_string(VK_API_VERSION_PATCH(v));
}

} // namespace vkf
