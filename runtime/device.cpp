#include "runtime/device.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace vkf {

namespace {

int type_rank(DeviceType t) {
    switch (t) {
        case DeviceType::DiscreteGpu:
            return 4;
        case DeviceType::IntegratedGpu:
            return 3;
        case DeviceType::VirtualGpu:
            return 2;
        case DeviceType::Cpu:
            return 1;
        case DeviceType::Other:
            break;
    }
    return 0;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

std::string device_list(const std::vector<DeviceInfo>& devices) {
    std::string out;
    for (const auto& d : devices) {
        out += "\n  " + fmt::to_string(d.index) + ": " + d.name + " (" + to_string(d.type) + ")";
    }
    return out.empty() ? "\n  (no Vulkan devices)" : out;
}

}  // namespace

std::vector<DeviceInfo> list_devices(const Instance& instance) {
    std::vector<DeviceInfo> out;
    const auto physical = instance.physical_devices();
    for (std::uint32_t i = 0; i < physical.size(); ++i) {
        out.push_back(query_device_info(physical[i], i, instance.api_version()));
    }
    return out;
}

std::size_t select_device(const std::vector<DeviceInfo>& devices, std::string_view selector) {
    std::vector<std::size_t> usable;
    for (std::size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].compute_queue_family != UINT32_MAX && devices[i].api_version >= VK_API_VERSION_1_1) {
            usable.push_back(i);
        }
    }
    if (usable.empty()) {
        throw Error(
            "no Vulkan 1.1 device with a compute queue was found; install a Vulkan driver (lavapipe: "
            "mesa-vulkan-drivers). Devices seen:" +
            device_list(devices));
    }
    if (selector.empty()) {
        std::stable_sort(usable.begin(), usable.end(), [&](std::size_t a, std::size_t b) {
            return type_rank(devices[a].type) > type_rank(devices[b].type);
        });
        return usable.front();
    }
    std::size_t index = 0;
    const auto [end, ec] = std::from_chars(selector.data(), selector.data() + selector.size(), index);
    if (ec == std::errc() && end == selector.data() + selector.size()) {
        if (std::find(usable.begin(), usable.end(), index) == usable.end()) {
            throw Error(
                "device selector '" + std::string(selector) +
                "' (VKF_DEVICE or --device): no usable device with that index. Devices:" + device_list(devices));
        }
        return index;
    }
    const std::string needle = lower(selector);
    for (std::size_t i : usable) {
        if (lower(devices[i].name).find(needle) != std::string::npos) {
            return i;
        }
    }
    throw Error("device selector '" + std::string(selector) + "' (VKF_DEVICE or --device): no device name contains '" +
                std::string(selector) + "'. Devices:" + device_list(devices));
}

Device::Device(const Instance& instance, VkPhysicalDevice physical, DeviceInfo info)
    : physical_(physical), queue_family_(info.compute_queue_family), info_(std::move(info)) {
    if (queue_family_ == UINT32_MAX) {
        throw Error("device '" + info_.name + "' has no compute queue");
    }
    const std::uint32_t api = std::min(info_.api_version, instance.api_version());
    const bool v12 = api >= VK_API_VERSION_1_2;
    const bool v13 = api >= VK_API_VERSION_1_3;

    std::vector<const char*> extensions;
    enabled_.storage_16bit = info_.storage_16bit;
    enabled_.storage_8bit = info_.storage_8bit;
    enabled_.float16_arithmetic = info_.float16_arithmetic;
    enabled_.int8_arithmetic = info_.int8_arithmetic;
    enabled_.int64 = info_.int64;
    enabled_.integer_dot_product = info_.integer_dot_product;
    enabled_.subgroup_size_control = info_.subgroup_size_control;
    enabled_.compute_full_subgroups = info_.compute_full_subgroups;
    enabled_.pipeline_creation_feedback = info_.pipeline_creation_feedback;
    // Only where the device offers all of it (extension, feature, memory model, fp16): a
    // device without cooperative matrices is created exactly as before.
    enabled_.cooperative_matrix = info_.cooperative_matrix && enabled_.float16_arithmetic;
    if (!v12 && (enabled_.storage_8bit))
        extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    if (!v12 && (enabled_.float16_arithmetic || enabled_.int8_arithmetic))
        extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    const bool size_control_features = enabled_.subgroup_size_control || enabled_.compute_full_subgroups;
    if (!v13 && size_control_features)
        extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    if (!v13 && enabled_.integer_dot_product)
        extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    if (!v13 && enabled_.pipeline_creation_feedback)
        extensions.push_back(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
    if (!v12 && (enabled_.storage_8bit || enabled_.float16_arithmetic))
        extensions.push_back(VK_KHR_STORAGE_BUFFER_STORAGE_CLASS_EXTENSION_NAME);
    if (enabled_.cooperative_matrix) {
        extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
        if (!v12)
            extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    }
    // Budgets are read from the physical device (MemoryAllocator), enabled for completeness.
    if (info_.memory_budget)
        extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

    VkPhysicalDevice16BitStorageFeatures storage16{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                                                   .storageBuffer16BitAccess = enabled_.storage_16bit};
    VkPhysicalDevice8BitStorageFeatures storage8{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                                                 .storageBuffer8BitAccess = enabled_.storage_8bit};
    VkPhysicalDeviceShaderFloat16Int8Features f16i8{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .shaderFloat16 = enabled_.float16_arithmetic,
        .shaderInt8 = enabled_.int8_arithmetic};
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
        .subgroupSizeControl = enabled_.subgroup_size_control,
        .computeFullSubgroups = enabled_.compute_full_subgroups};
    VkPhysicalDeviceShaderIntegerDotProductFeatures int_dot{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .shaderIntegerDotProduct = enabled_.integer_dot_product};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .cooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
        .vulkanMemoryModel = VK_TRUE,
        .vulkanMemoryModelDeviceScope = VK_TRUE};
    VkPhysicalDeviceFeatures2 features{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.features.shaderInt64 = enabled_.int64 ? VK_TRUE : VK_FALSE;
    void** tail = &features.pNext;
    auto chain = [&tail](auto& s) {
        *tail = &s;
        tail = &s.pNext;
    };
    chain(storage16);
    if (enabled_.storage_8bit)
        chain(storage8);
    if (enabled_.float16_arithmetic || enabled_.int8_arithmetic)
        chain(f16i8);
    if (size_control_features)
        chain(size_control);
    if (enabled_.integer_dot_product)
        chain(int_dot);
    if (enabled_.cooperative_matrix) {
        chain(coopmat);
        chain(memory_model);
    }

    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo queue_info{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                             .queueFamilyIndex = queue_family_,
                                             .queueCount = 1,
                                             .pQueuePriorities = &priority};
    const VkDeviceCreateInfo create{.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                    .pNext = &features,
                                    .queueCreateInfoCount = 1,
                                    .pQueueCreateInfos = &queue_info,
                                    .enabledExtensionCount = static_cast<std::uint32_t>(extensions.size()),
                                    .ppEnabledExtensionNames = extensions.data()};
    check(vkCreateDevice(physical_, &create, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
}

Device::Device(const ExternalDevice& external, DeviceInfo info)
    : physical_(external.physical_device),
      device_(external.device),
      queue_(external.queue),
      queue_family_(external.queue_family),
      owned_(false),
      info_(std::move(info)),
      enabled_(external.enabled) {
    if (device_ == VK_NULL_HANDLE || queue_ == VK_NULL_HANDLE || physical_ == VK_NULL_HANDLE) {
        throw Error("adopting an application's device: physical device, device and queue must all be set");
    }
    info_.compute_queue_family = queue_family_;
    // The application's device has cooperative matrices only where it enabled them.
    info_.cooperative_matrix = info_.cooperative_matrix && enabled_.cooperative_matrix;
}

VkResult Device::wait_idle_and_release() const noexcept {
    const VkResult r = vkDeviceWaitIdle(device_);
    deferred_.run_deferred();
    return r;
}

Device::~Device() {
    // An application's device is left alone unless destruction was deferred. Nothing to
    // report from a destructor: the device goes either way.
    if (device_ != VK_NULL_HANDLE && (owned_ || lost())) {
        wait_idle_and_release();
        if (owned_) {
            vkDestroyDevice(device_, nullptr);
        }
    }
}

}  // namespace vkf
