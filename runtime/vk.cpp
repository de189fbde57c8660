#include "runtime/vk.hpp"

#include "base/error.hpp"

// Vulkan-Hpp for its enum names only; its dispatcher is never used (volk loads Vulkan).
#define VULKAN_HPP_DISPATCH_LOADER_DYNAMIC 1
#define VULKAN_HPP_NO_EXCEPTIONS
#include <vulkan/vulkan.hpp>
#include <vulkan/vulkan_to_string.hpp>

#include <fmt/format.h>

#include <cctype>

#include <mutex>

namespace vkf {

std::string to_string(VkResult result) {
    // Vulkan-Hpp spells VK_ERROR_DEVICE_LOST as "ErrorDeviceLost": back to the spec's name,
    // which is what people search for. An underscore goes before each capital that follows a
    // lower-case letter or a digit, so "EXT" and "KHR" suffixes stay whole.
    const std::string hpp = vk::to_string(static_cast<vk::Result>(result));
    if (hpp.starts_with("invalid")) {
        return "VkResult(" + fmt::to_string(static_cast<int>(result)) + ")";
    }
    std::string name = "VK";
    for (std::size_t i = 0; i < hpp.size(); ++i) {
        const char c = hpp[i];
        const bool after_word = i > 0 && (std::islower(static_cast<unsigned char>(hpp[i - 1])) ||
                                          std::isdigit(static_cast<unsigned char>(hpp[i - 1])));
        if (i == 0 || (std::isupper(static_cast<unsigned char>(c)) && after_word)) {
            name += '_';
        }
        name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
}

std::string driver_id_name(std::uint32_t id) {
    if (id == 0) {
        return "unknown";
    }
    return vk::to_string(static_cast<vk::DriverId>(id));
}

void check(VkResult result, const char* call) {
    if (result == VK_SUCCESS) {
        return;
    }
    std::string message =
        std::string(call) + " failed: " + to_string(result) + " (" + fmt::to_string(static_cast<int>(result)) + ")";
    if (result == VK_ERROR_DEVICE_LOST) {
        throw DeviceLostError(message + "; the GPU reset or the driver gave up on this device");
    }
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY) {
        throw OutOfMemoryError(message + "; the device has no memory left for this request");
    }
    throw Error(message);
}

void load_vulkan_loader() {
    static std::once_flag once;
    static VkResult result = VK_SUCCESS;
    std::call_once(once, [] { result = volkInitialize(); });
    if (result != VK_SUCCESS) {
        // volk tries libvulkan.so.1, then libvulkan.so: Android's loader is the system's
        // libvulkan.so (API level 24 and up), a Linux distribution's is libvulkan.so.1.
#if defined(__ANDROID__)
        throw Error("cannot open the Vulkan loader (libvulkan.so): this Android device has no Vulkan support");
#else
        throw Error(
            "cannot open the Vulkan loader (libvulkan.so.1): install libvulkan1 and a Vulkan "
            "driver, e.g. mesa-vulkan-drivers for the CPU driver lavapipe");
#endif
    }
}

namespace {

// The state behind volk's process-wide table: not vkformer's own, but guarded here.
std::mutex& instance_functions_mutex() {
    static std::mutex mutex;
    return mutex;
}
std::size_t live_instances = 0;  // guarded by instance_functions_mutex()

}  // namespace

void register_instance_functions(VkInstance instance) {
    const std::lock_guard lock(instance_functions_mutex());
    if (live_instances == 0) {
        volkLoadInstance(instance);
    }
    ++live_instances;
}

void unregister_instance_functions() {
    const std::lock_guard lock(instance_functions_mutex());
    --live_instances;
}

std::string format_version(std::uint32_t v) {
    return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

}  // namespace vkf
