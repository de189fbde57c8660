#pragma once
// The logical device and its compute queue. Only features the device has are enabled.

#include "runtime/device_info.hpp"
#include "runtime/instance.hpp"

#include <string_view>
#include <vector>

namespace vkf {

struct EnabledFeatures {
    bool storage_16bit = false;
    bool storage_8bit = false;
    bool float16_arithmetic = false;
    bool int8_arithmetic = false;
    bool int64 = false;                // shaderInt64
    bool integer_dot_product = false;  // shaderIntegerDotProduct
    bool subgroup_size_control = false;
    bool compute_full_subgroups = false;  // computeFullSubgroups
    bool pipeline_creation_feedback = false;
};

// Handles an application already owns; vkformer uses but never destroys them.
struct ExternalDevice {
    VkPhysicalDevice physical_device = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;  // must support compute
    std::uint32_t queue_family = 0;
    EnabledFeatures enabled;  // what the application enabled at vkCreateDevice
};

class Device {
public:
    Device(const Instance& instance, VkPhysicalDevice physical, DeviceInfo info);
    Device(const ExternalDevice& external, DeviceInfo info);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    VkDevice handle() const { return device_; }
    VkPhysicalDevice physical() const { return physical_; }
    VkQueue queue() const { return queue_; }
    std::uint32_t queue_family() const { return queue_family_; }
    const DeviceInfo& info() const { return info_; }
    const EnabledFeatures& enabled() const { return enabled_; }

private:
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    std::uint32_t queue_family_ = 0;
    bool owned_ = true;
    DeviceInfo info_;
    EnabledFeatures enabled_;
};

std::vector<DeviceInfo> list_devices(const Instance& instance);

// `selector` is a device index or a case-insensitive name substring; empty picks the best
// device: discrete > integrated > virtual > CPU > other, then the first enumerated.
// Throws vkf::Error listing the devices when nothing matches.
std::size_t select_device(const std::vector<DeviceInfo>& devices, std::string_view selector);

}  // namespace vkf
