#pragma once
// What a physical device offers, read once from the driver. Everything a shader assumes
// comes from here (docs/DESIGN.md, portability rules).

#include "runtime/vk.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vkf {

enum class DeviceType { Other, IntegratedGpu, DiscreteGpu, VirtualGpu, Cpu };
const char* to_string(DeviceType type);

struct MemoryHeapInfo {
    std::uint64_t size = 0;
    bool device_local = false;
    bool host_visible = false;  // some memory type of this heap is host-visible
};

struct SubgroupOps {
    bool basic = false, vote = false, arithmetic = false, ballot = false, shuffle = false, shuffle_relative = false,
         clustered = false, quad = false;
};

// One cooperative-matrix multiply the device runs (VK_NV_cooperative_matrix,
// vkGetPhysicalDeviceCooperativeMatrixPropertiesNV): D[m, n] = A[m, k] B[k, n] + C, with fp16
// A and B, at subgroup scope. acc_f32: C and D are fp32 (else fp16).
struct CoopMatShape {
    std::uint32_t m = 0, n = 0, k = 0;
    bool acc_f32 = true;
    bool operator==(const CoopMatShape&) const = default;
};

struct DeviceInfo {
    std::uint32_t index = 0;  // in vkEnumeratePhysicalDevices order
    std::string name;
    DeviceType type = DeviceType::Other;
    std::uint32_t vendor_id = 0;
    std::uint32_t device_id = 0;
    std::string vendor_name;  // from vendor_id
    std::uint32_t api_version = 0;
    std::uint32_t driver_version = 0;  // raw, vendor-specific encoding
    std::string driver_version_text;   // decoded per vendor convention
    std::uint32_t driver_id = 0;       // VkDriverId, 0 when unknown
    std::string driver_name;
    std::string driver_info;
    std::array<std::uint8_t, VK_UUID_SIZE> device_uuid{};
    std::array<std::uint8_t, VK_UUID_SIZE> driver_uuid{};
    std::array<std::uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};

    std::uint32_t subgroup_size = 0;
    std::uint32_t min_subgroup_size = 0;  // equal to subgroup_size without subgroup size control
    std::uint32_t max_subgroup_size = 0;
    // subgroupSizeControl with compute in requiredSubgroupSizeStages: a compute pipeline may
    // require a subgroup size between min_subgroup_size and max_subgroup_size.
    bool subgroup_size_control = false;
    bool compute_full_subgroups = false;                // computeFullSubgroups: it may require full subgroups
    std::uint32_t max_compute_workgroup_subgroups = 0;  // with a required size; 0 without size control
    bool subgroup_in_compute = false;
    SubgroupOps subgroup_ops;

    std::uint32_t max_shared_memory = 0;
    std::array<std::uint32_t, 3> max_workgroup_size{};
    std::uint32_t max_workgroup_invocations = 0;
    std::array<std::uint32_t, 3> max_workgroup_count{};
    std::uint32_t max_push_constants = 0;
    std::uint32_t max_per_stage_storage_buffers = 0;       // maxPerStageDescriptorStorageBuffers (Vulkan: >= 4)
    std::uint32_t max_descriptor_set_storage_buffers = 0;  // maxDescriptorSetStorageBuffers (Vulkan: >= 24)
    std::uint64_t max_storage_buffer_range = 0;
    std::uint64_t min_storage_buffer_offset_alignment = 0;
    std::uint32_t max_memory_allocation_count = 0;
    std::uint64_t max_memory_allocation_size = 0;
    std::vector<MemoryHeapInfo> memory_heaps;
    // Compute units (NVIDIA SMs, AMD CUs, Arm shader cores) where an extension reports them:
    // VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties(2), VK_ARM_shader_core_builtins.
    // 0: unknown (Vulkan core has no such query).
    std::uint32_t compute_units = 0;
    bool memory_budget = false;  // VK_EXT_memory_budget: per-heap budget and usage (MemoryBudget)

    bool storage_16bit = false;          // storageBuffer16BitAccess
    bool storage_8bit = false;           // storageBuffer8BitAccess
    bool float16_arithmetic = false;     // shaderFloat16
    bool int8_arithmetic = false;        // shaderInt8
    bool int64 = false;                  // shaderInt64
    bool integer_dot_product = false;    // shaderIntegerDotProduct (Vulkan 1.3 or VK_KHR_shader_integer_dot_product)
    bool cooperative_matrix_nv = false;  // VK_NV_cooperative_matrix is listed
    // The extension with its cooperativeMatrix feature, in compute shaders, and what its
    // shaders also need: the Vulkan memory model with device scope (glslang's
    // GL_NV_cooperative_matrix code declares the model, and the fp16 KV cache's atomics use
    // device scope) and shaderFloat16. Then the device is created with all of them enabled.
    bool cooperative_matrix = false;
    std::vector<CoopMatShape> cooperative_matrix_shapes;  // fp16 x fp16, subgroup scope, as reported
    bool pipeline_creation_feedback = false;

    bool timestamps = false;  // compute queue has timestampValidBits > 0
    std::uint32_t timestamp_valid_bits = 0;
    double timestamp_period_ns = 0.0;  // nanoseconds per tick
    std::uint32_t compute_queue_family = 0;

    std::string uuid_hex() const;
};

// Reads every field above. `index` is the device's position in enumeration order.
DeviceInfo query_device_info(VkPhysicalDevice device, std::uint32_t index, std::uint32_t instance_api_version);

std::string hex_bytes(const std::uint8_t* bytes, std::size_t n);

}  // namespace vkf
