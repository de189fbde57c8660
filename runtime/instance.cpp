#include "runtime/instance.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace vkf {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool has_layer(const char* name) {
    std::uint32_t count = 0;
    check(vkEnumerateInstanceLayerProperties(&count, nullptr), "vkEnumerateInstanceLayerProperties");
    std::vector<VkLayerProperties> layers(count);
    check(vkEnumerateInstanceLayerProperties(&count, layers.data()), "vkEnumerateInstanceLayerProperties");
    return std::any_of(layers.begin(), layers.end(),
                       [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool has_layer_extension(const char* layer, const char* name) {
    std::uint32_t count = 0;
    check(vkEnumerateInstanceExtensionProperties(layer, &count, nullptr), "vkEnumerateInstanceExtensionProperties");
    std::vector<VkExtensionProperties> exts(count);
    check(vkEnumerateInstanceExtensionProperties(layer, &count, exts.data()), "vkEnumerateInstanceExtensionProperties");
    return std::any_of(exts.begin(), exts.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

std::vector<VkExtensionProperties> instance_extensions() {
    std::uint32_t count = 0;
    check(vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr), "vkEnumerateInstanceExtensionProperties");
    std::vector<VkExtensionProperties> exts(count);
    check(vkEnumerateInstanceExtensionProperties(nullptr, &count, exts.data()),
          "vkEnumerateInstanceExtensionProperties");
    return exts;
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
    return std::any_of(exts.begin(), exts.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

}  // namespace

void print_message(MessageSeverity severity, std::string_view message) {
    if (severity == MessageSeverity::Info) {
        return;
    }
    std::fprintf(stderr, "vkformer %s: %.*s\n", severity == MessageSeverity::Error ? "error" : "warning",
                 static_cast<int>(message.size()), message.data());
}

Instance::Instance(InstanceOptions options) : on_message_(std::move(options.on_message)) {
    if (!on_message_) {
        on_message_ = print_message;
    }
    load_vulkan_loader();

    std::uint32_t loader_version = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion != nullptr) {
        check(vkEnumerateInstanceVersion(&loader_version), "vkEnumerateInstanceVersion");
    }
    if (loader_version < VK_API_VERSION_1_1) {
        throw Error("the Vulkan loader only offers Vulkan " + format_version(loader_version) +
                    "; vkformer needs Vulkan 1.1 or newer");
    }
    api_version_ = std::min(loader_version, static_cast<std::uint32_t>(VK_API_VERSION_1_3));

    std::vector<const char*> layers;
    bool validation_features = false;
    if (options.validation) {
        if (has_layer(kValidationLayer)) {
            layers.push_back(kValidationLayer);
            validation_enabled_ = true;
            validation_features = has_layer_extension(kValidationLayer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        } else {
            report(MessageSeverity::Warning,
                   "validation was requested but VK_LAYER_KHRONOS_validation is not "
                   "installed (Debian: vulkan-validationlayers); running without it");
        }
    }

    const auto exts = instance_extensions();
    std::vector<const char*> extensions;
    const bool debug_utils = has_extension(exts, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (debug_utils) {
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    if (validation_features) {
        extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    }
    VkInstanceCreateFlags flags = 0;
    // MoltenVK (Apple) only enumerates through the portability extension.
    if (has_extension(exts, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }

    const VkApplicationInfo app{
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "vkformer",
        .applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0),
        .pEngineName = "vkformer",
        .engineVersion = VK_MAKE_API_VERSION(0, 0, 1, 0),
        .apiVersion = api_version_,
    };
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = &Instance::debug_callback,
        .pUserData = this,
    };
    // Synchronization validation reports missing or wrong barriers: the recorder's hazard
    // tracking is checked by it in every test.
    const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                     .pNext = debug_utils ? &messenger_info : nullptr,
                                     .enabledValidationFeatureCount = 1,
                                     .pEnabledValidationFeatures = enables};
    const VkInstanceCreateInfo info{
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        // The messenger also catches messages from vkCreateInstance/vkDestroyInstance.
        .pNext = validation_features ? static_cast<const void*>(&features)
                 : debug_utils       ? static_cast<const void*>(&messenger_info)
                                     : nullptr,
        .flags = flags,
        .pApplicationInfo = &app,
        .enabledLayerCount = static_cast<std::uint32_t>(layers.size()),
        .ppEnabledLayerNames = layers.data(),
        .enabledExtensionCount = static_cast<std::uint32_t>(extensions.size()),
        .ppEnabledExtensionNames = extensions.data(),
    };
    check(vkCreateInstance(&info, nullptr, &instance_), "vkCreateInstance");
    register_instance_functions(instance_);
    if (debug_utils) {
        // This instance's own pointers: the shared table may come from an instance without
        // the extension (an application's).
        const auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
        destroy_messenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
        const VkResult r = create != nullptr && destroy_messenger_ != nullptr
                               ? create(instance_, &messenger_info, nullptr, &messenger_)
                               : VK_ERROR_EXTENSION_NOT_PRESENT;
        if (r != VK_SUCCESS) {
            vkDestroyInstance(instance_, nullptr);
            unregister_instance_functions();
            check(r, "vkCreateDebugUtilsMessengerEXT");
        }
    }
}

Instance::Instance(VkInstance external, std::uint32_t api_version, MessageCallback on_message)
    : instance_(external), api_version_(api_version), owned_(false), on_message_(std::move(on_message)) {
    if (external == VK_NULL_HANDLE) {
        throw Error("adopting an application's VkInstance: the handle is VK_NULL_HANDLE");
    }
    if (!on_message_) {
        on_message_ = print_message;
    }
    load_vulkan_loader();
    register_instance_functions(instance_);
}

Instance::~Instance() {
    if (messenger_ != VK_NULL_HANDLE) {
        destroy_messenger_(instance_, messenger_, nullptr);
    }
    if (owned_ && instance_ != VK_NULL_HANDLE) {
        vkDestroyInstance(instance_, nullptr);
    }
    unregister_instance_functions();  // after this instance's last call
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
    std::uint32_t count = 0;
    check(vkEnumeratePhysicalDevices(instance_, &count, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> devices(count);
    check(vkEnumeratePhysicalDevices(instance_, &count, devices.data()), "vkEnumeratePhysicalDevices");
    devices.resize(count);
    return devices;
}

void Instance::report(MessageSeverity severity, std::string_view message) const {
    on_message_(severity, message);
}

namespace {

// A multiarch system lists every architecture's drivers in the same icd.d folder (Debian's
// mesa-vulkan-drivers:i386 or :arm64 beside :amd64), and the loader reports each one it
// cannot open as an error. Those drivers were never ours to use: not a validation failure.
bool is_unloadable_icd_message(const VkDebugUtilsMessengerCallbackDataEXT* data) {
    if (data == nullptr || data->pMessageIdName == nullptr || data->pMessage == nullptr ||
        std::string_view(data->pMessageIdName) != "Loader Message") {
        return false;
    }
    const std::string_view text(data->pMessage);
    return text.find("Failed loading library associated with ICD JSON") != std::string_view::npos ||
           (text.find("libvulkan_") != std::string_view::npos &&
            (text.find("cannot open shared object file") != std::string_view::npos ||
             text.find("wrong ELF class") != std::string_view::npos));
}

}  // namespace

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                        VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                                        const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    auto* self = static_cast<Instance*>(user);
    const MessageSeverity s = is_unloadable_icd_message(data)                                ? MessageSeverity::Info
                              : (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)   ? MessageSeverity::Error
                              : (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) ? MessageSeverity::Warning
                                                                                             : MessageSeverity::Info;
    if (s != MessageSeverity::Info) {
        self->validation_messages_.fetch_add(1);
    }
    std::string text = "[validation] ";
    if (data != nullptr && data->pMessageIdName != nullptr) {
        text += data->pMessageIdName;
        text += ": ";
    }
    text += (data != nullptr && data->pMessage != nullptr) ? data->pMessage : "(no message)";
    try {
        self->on_message_(s, text);
    } catch (...) {
        // A callback must not throw through the driver.
    }
    return VK_FALSE;
}

}  // namespace vkf
