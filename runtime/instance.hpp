#pragma once
// The VkInstance owner: loader, API version, the Khronos validation layer on request and a
// debug messenger that routes its messages to a callback (tests fail on any of them).

#include "runtime/vk.hpp"

#include <atomic>
#include <functional>
#include <string_view>
#include <vector>

namespace vkf {

enum class MessageSeverity { Info, Warning, Error };

// Receives validation-layer messages and vkformer's own warnings (e.g. an ignored cache file).
using MessageCallback = std::function<void(MessageSeverity, std::string_view message)>;

// Prints warnings and errors to stderr; the default when no callback is given.
void print_message(MessageSeverity severity, std::string_view message);

struct InstanceOptions {
    bool validation = false;     // enable VK_LAYER_KHRONOS_validation when installed
    MessageCallback on_message;  // null: print_message
};

class Instance {
public:
    explicit Instance(InstanceOptions options);
    // Adopts an instance the application owns; vkformer never destroys it.
    Instance(VkInstance external, std::uint32_t api_version, MessageCallback on_message);
    ~Instance();
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    VkInstance handle() const { return instance_; }
    std::uint32_t api_version() const { return api_version_; }
    bool validation_enabled() const { return validation_enabled_; }
    bool debug_utils_enabled() const { return messenger_ != VK_NULL_HANDLE; }
    // The messenger's callback runs in whichever thread makes the Vulkan call it reports on:
    // with a Context used from several threads, `on_message` must be thread-safe.
    std::vector<VkPhysicalDevice> physical_devices() const;

    // Sends a vkformer message through the same callback as the validation layer's.
    void report(MessageSeverity severity, std::string_view message) const;
    // Validation warnings and errors seen so far.
    std::size_t validation_message_count() const { return validation_messages_.load(); }

private:
    static VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                         VkDebugUtilsMessageTypeFlagsEXT types,
                                                         const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);

    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
    std::uint32_t api_version_ = VK_API_VERSION_1_1;
    bool owned_ = true;
    bool validation_enabled_ = false;
    MessageCallback on_message_;
    std::atomic<std::size_t> validation_messages_{0};
};

}  // namespace vkf
