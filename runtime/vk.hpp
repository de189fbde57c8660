#pragma once
// Vulkan as vkformer sees it: prototypes come from volk, which opens the loader at run time
// (as Android apps need), and every VkResult goes through check().

#include <volk.h>

#include <string>

namespace vkf {

// "VK_ERROR_DEVICE_LOST": the specification's name of a result.
std::string to_string(VkResult result);
// "MesaLlvmpipe", "NvidiaProprietary": the name of a VkDriverId (Vulkan-Hpp's); "unknown"
// for 0, which drivers without VK_KHR_driver_properties report.
std::string driver_id_name(std::uint32_t id);

// Throws vkf::Error naming the call and the result unless `result` is VK_SUCCESS.
// VK_ERROR_DEVICE_LOST becomes vkf::DeviceLostError.
void check(VkResult result, const char* call);

// Opens the Vulkan loader once per process; throws when no loader is installed.
void load_vulkan_loader();

// volk keeps one process-wide table of Vulkan function pointers, which every Vulkan call in
// every thread reads. Each Instance registers while it lives: the table is loaded from the
// first instance, and again only from an instance created while no other is alive, so it is
// never rewritten under another thread's calls. The pointers are the loader's trampolines,
// which dispatch on the handle they are given, so one instance's table serves all; instance
// extension functions (debug utils) are fetched per instance instead (Instance).
void register_instance_functions(VkInstance instance);
void unregister_instance_functions();

std::string format_version(std::uint32_t vk_version);

}  // namespace vkf
