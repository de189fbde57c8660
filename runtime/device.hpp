#pragma once
// The logical device and its compute queue. Only features the device has are enabled.

#include "runtime/deferred_release.hpp"
#include "runtime/device_info.hpp"
#include "runtime/instance.hpp"

#include <string_view>
#include <utility>
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
    // VK_NV_cooperative_matrix's cooperativeMatrix and the vulkanMemoryModel (with device
    // scope) its shaders declare (DeviceInfo::cooperative_matrix).
    bool cooperative_matrix = false;
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

    // A submission timed out or the device was lost: the GPU may still be running work that
    // nobody waits for. From then on release() defers (runtime/deferred_release.hpp).
    void mark_lost() const noexcept { deferred_.start_deferring(); }
    bool lost() const noexcept { return deferred_.deferring(); }
    // How every owner of a device object destroys it: `destroy` (noexcept) runs now, or,
    // once the device is lost, after wait_idle_and_release()'s wait.
    template <class F>
    void release(F&& destroy) const noexcept {
        deferred_.release(std::forward<F>(destroy));
    }
    // vkDeviceWaitIdle, then the destruction that was deferred. Returns the wait's result
    // (VK_ERROR_DEVICE_LOST on a lost device; what was deferred is destroyed either way).
    VkResult wait_idle_and_release() const noexcept;
    std::size_t deferred_releases() const { return deferred_.deferred_count(); }

private:
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    std::uint32_t queue_family_ = 0;
    bool owned_ = true;
    DeviceInfo info_;
    EnabledFeatures enabled_;
    // Mutable: deferring destruction changes no property of the device, and every owner
    // holds it const.
    mutable DeferredRelease deferred_;
};

std::vector<DeviceInfo> list_devices(const Instance& instance);

// `selector` is a device index or a case-insensitive name substring; empty picks the best
// device: discrete > integrated > virtual > CPU > other, then the first enumerated.
// Throws vkf::Error listing the devices when nothing matches.
std::size_t select_device(const std::vector<DeviceInfo>& devices, std::string_view selector);

}  // namespace vkf
