#include "runtime/device_info.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

namespace vkf {

namespace {

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice device) {
    std::uint32_t count = 0;
    check(vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr),
          "vkEnumerateDeviceExtensionProperties");
    std::vector<VkExtensionProperties> exts(count);
    check(vkEnumerateDeviceExtensionProperties(device, nullptr, &count, exts.data()),
          "vkEnumerateDeviceExtensionProperties");
    exts.resize(count);
    return exts;
}

bool has(const std::vector<VkExtensionProperties>& exts, const char* name) {
    return std::any_of(exts.begin(), exts.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// The fp16 x fp16 -> fp32 (or fp16) subgroup-scope shapes of VK_NV_cooperative_matrix, in
// the driver's order. Empty where the query is missing or fails (a listing must not stop
// at one device's broken extension).
std::vector<CoopMatShape> cooperative_matrix_shapes(VkPhysicalDevice device) {
    if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV == nullptr) {
        return {};
    }
    std::uint32_t count = 0;
    if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, &count, nullptr) != VK_SUCCESS) {
        return {};
    }
    std::vector<VkCooperativeMatrixPropertiesNV> props(
        count, VkCooperativeMatrixPropertiesNV{.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
    const VkResult r = vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, &count, props.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        return {};
    }
    props.resize(std::min<std::size_t>(count, props.size()));
    std::vector<CoopMatShape> out;
    for (const VkCooperativeMatrixPropertiesNV& p : props) {
        const bool f16_inputs = p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV;
        const bool f32_acc = p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV;
        const bool f16_acc = p.CType == VK_COMPONENT_TYPE_FLOAT16_NV && p.DType == VK_COMPONENT_TYPE_FLOAT16_NV;
        if (f16_inputs && (f32_acc || f16_acc) && p.scope == VK_SCOPE_SUBGROUP_NV && p.MSize > 0 && p.NSize > 0 &&
            p.KSize > 0) {
            out.push_back({.m = p.MSize, .n = p.NSize, .k = p.KSize, .acc_f32 = f32_acc});
        }
    }
    return out;
}

std::string vendor_name(std::uint32_t id) {
    switch (id) {
        case 0x1002:
            return "AMD";
        case 0x10DE:
            return "NVIDIA";
        case 0x8086:
            return "Intel";
        case 0x13B5:
            return "Arm";
        case 0x5143:
            return "Qualcomm";
        case 0x1010:
            return "Imagination";
        case 0x106B:
            return "Apple";
        case 0x14E4:
            return "Broadcom";
        case 0x1AE0:
            return "Google";
        case 0x10005:
            return "Mesa";
        default:
            return "unknown";
    }
}

std::string driver_version_text(std::uint32_t vendor, std::uint32_t v) {
    auto s = [](std::uint32_t x) { return fmt::to_string(x); };
    if (vendor == 0x10DE) {  // NVIDIA: 10.8.8.6 bits
        return s((v >> 22) & 0x3ff) + "." + s((v >> 14) & 0xff) + "." + s((v >> 6) & 0xff) + "." + s(v & 0x3f);
    }
#if defined(_WIN32)
    if (vendor == 0x8086) {  // Intel on Windows: 18.14 bits
        return s(v >> 14) + "." + s(v & 0x3fff);
    }
#endif
    return format_version(v);
}

}  // namespace

const char* to_string(DeviceType type) {
    switch (type) {
        case DeviceType::IntegratedGpu:
            return "integrated";
        case DeviceType::DiscreteGpu:
            return "discrete";
        case DeviceType::VirtualGpu:
            return "virtual";
        case DeviceType::Cpu:
            return "cpu";
        case DeviceType::Other:
            break;
    }
    return "other";
}

std::string hex_bytes(const std::uint8_t* bytes, std::size_t n) {
    return fmt::format("{:02x}", fmt::join(bytes, bytes + n, ""));
}

std::string DeviceInfo::uuid_hex() const {
    return hex_bytes(device_uuid.data(), device_uuid.size());
}

DeviceInfo query_device_info(VkPhysicalDevice device, std::uint32_t index, std::uint32_t instance_api_version) {
    DeviceInfo info;
    info.index = index;
    const auto exts = device_extensions(device);

    VkPhysicalDeviceProperties base{};
    vkGetPhysicalDeviceProperties(device, &base);
    const std::uint32_t api = std::min(base.apiVersion, instance_api_version);
    const bool v12 = api >= VK_API_VERSION_1_2;
    const bool v13 = api >= VK_API_VERSION_1_3;
    const bool has_driver_props = v12 || has(exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    const bool has_size_control = v13 || has(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    const bool has_storage8 = v12 || has(exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    const bool has_f16i8 = v12 || has(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    const bool has_int_dot = v13 || has(exts, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    const bool has_coopmat = has(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    const bool has_memory_model = v12 || has(exts, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);

    // Properties: each struct is chained only where the device can fill it.
    VkPhysicalDeviceSubgroupProperties subgroup{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceIDProperties ids{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties maint3{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlProperties size_control{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    // Compute units: vendor extensions only, each chained where the device lists it.
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv_sm{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceShaderCorePropertiesAMD amd_cores{.sType =
                                                          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceShaderCoreProperties2AMD amd_cores2{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
    VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM arm_cores{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
    const bool has_nv_sm = has(exts, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
    const bool has_amd_cores = has(exts, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
    const bool has_amd_cores2 = has(exts, VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME);
    // VK_ARM_shader_core_properties is newer than Debian 12's headers (1.3.239);
    // VK_ARM_shader_core_builtins reports the shader-core count as well.
    const bool has_arm_cores = has(exts, VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME);
    VkPhysicalDeviceProperties2 props{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    void** tail = &props.pNext;
    auto chain = [&tail](auto& s) {
        *tail = &s;
        tail = &s.pNext;
    };
    // Vulkan 1.0 devices cannot fill the 1.1 structs; they are reported but never selected.
    const bool v11 = api >= VK_API_VERSION_1_1;
    if (v11) {
        chain(subgroup);
        chain(ids);
        chain(maint3);
    }
    if (has_driver_props) {
        chain(driver);
    }
    if (has_size_control) {
        chain(size_control);
    }
    if (has_nv_sm) {
        chain(nv_sm);
    }
    if (has_amd_cores) {
        chain(amd_cores);
    }
    if (has_amd_cores2) {
        chain(amd_cores2);
    }
    if (has_arm_cores) {
        chain(arm_cores);
    }
    VkPhysicalDeviceCooperativeMatrixPropertiesNV coopmat_props{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    if (has_coopmat) {
        chain(coopmat_props);
    }
    vkGetPhysicalDeviceProperties2(device, &props);

    // Features, likewise.
    VkPhysicalDevice16BitStorageFeatures storage16{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDevice8BitStorageFeatures storage8{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16i8{.sType =
                                                        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control_features{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceShaderIntegerDotProductFeatures int_dot{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceFeatures2 features{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    tail = &features.pNext;
    if (v11) {
        chain(storage16);
    }
    if (has_storage8) {
        chain(storage8);
    }
    if (has_f16i8) {
        chain(f16i8);
    }
    if (has_size_control) {
        chain(size_control_features);
    }
    if (has_int_dot) {
        chain(int_dot);
    }
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat_features{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    if (has_coopmat) {
        chain(coopmat_features);
    }
    if (has_memory_model) {
        chain(memory_model);
    }
    vkGetPhysicalDeviceFeatures2(device, &features);

    info.name = base.deviceName;
    switch (base.deviceType) {
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            info.type = DeviceType::IntegratedGpu;
            break;
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            info.type = DeviceType::DiscreteGpu;
            break;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            info.type = DeviceType::VirtualGpu;
            break;
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            info.type = DeviceType::Cpu;
            break;
        default:
            info.type = DeviceType::Other;
            break;
    }
    info.vendor_id = base.vendorID;
    info.device_id = base.deviceID;
    info.vendor_name = vendor_name(base.vendorID);
    info.api_version = base.apiVersion;
    info.driver_version = base.driverVersion;
    info.driver_version_text = driver_version_text(base.vendorID, base.driverVersion);
    if (has_driver_props) {
        info.driver_id = static_cast<std::uint32_t>(driver.driverID);
        info.driver_name = driver.driverName;
        info.driver_info = driver.driverInfo;
    }
    std::copy_n(ids.deviceUUID, VK_UUID_SIZE, info.device_uuid.begin());
    std::copy_n(ids.driverUUID, VK_UUID_SIZE, info.driver_uuid.begin());
    std::copy_n(base.pipelineCacheUUID, VK_UUID_SIZE, info.pipeline_cache_uuid.begin());

    info.subgroup_size = subgroup.subgroupSize;
    info.subgroup_in_compute = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    const VkSubgroupFeatureFlags ops = info.subgroup_in_compute ? subgroup.supportedOperations : 0;
    info.subgroup_ops = SubgroupOps{
        .basic = (ops & VK_SUBGROUP_FEATURE_BASIC_BIT) != 0,
        .vote = (ops & VK_SUBGROUP_FEATURE_VOTE_BIT) != 0,
        .arithmetic = (ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0,
        .ballot = (ops & VK_SUBGROUP_FEATURE_BALLOT_BIT) != 0,
        .shuffle = (ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0,
        .shuffle_relative = (ops & VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT) != 0,
        .clustered = (ops & VK_SUBGROUP_FEATURE_CLUSTERED_BIT) != 0,
        .quad = (ops & VK_SUBGROUP_FEATURE_QUAD_BIT) != 0,
    };
    info.subgroup_size_control = has_size_control && size_control_features.subgroupSizeControl &&
                                 (size_control.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    info.min_subgroup_size = info.subgroup_size_control ? size_control.minSubgroupSize : info.subgroup_size;
    info.max_subgroup_size = info.subgroup_size_control ? size_control.maxSubgroupSize : info.subgroup_size;
    info.compute_full_subgroups = has_size_control && size_control_features.computeFullSubgroups;
    info.max_compute_workgroup_subgroups = info.subgroup_size_control ? size_control.maxComputeWorkgroupSubgroups : 0;

    const VkPhysicalDeviceLimits& l = base.limits;
    info.max_shared_memory = l.maxComputeSharedMemorySize;
    info.max_workgroup_size = {l.maxComputeWorkGroupSize[0], l.maxComputeWorkGroupSize[1],
                               l.maxComputeWorkGroupSize[2]};
    info.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
    info.max_workgroup_count = {l.maxComputeWorkGroupCount[0], l.maxComputeWorkGroupCount[1],
                                l.maxComputeWorkGroupCount[2]};
    info.max_push_constants = l.maxPushConstantsSize;
    info.max_per_stage_storage_buffers = l.maxPerStageDescriptorStorageBuffers;
    info.max_descriptor_set_storage_buffers = l.maxDescriptorSetStorageBuffers;
    info.max_storage_buffer_range = l.maxStorageBufferRange;
    info.min_storage_buffer_offset_alignment = l.minStorageBufferOffsetAlignment;
    info.max_memory_allocation_count = l.maxMemoryAllocationCount;
    info.max_memory_allocation_size = maint3.maxMemoryAllocationSize;
    if (has_nv_sm) {
        info.compute_units = nv_sm.shaderSMCount;
    } else if (has_amd_cores2 && amd_cores2.activeComputeUnitCount > 0) {
        info.compute_units = amd_cores2.activeComputeUnitCount;  // without the parts fused off
    } else if (has_amd_cores) {
        info.compute_units =
            amd_cores.shaderEngineCount * amd_cores.shaderArraysPerEngineCount * amd_cores.computeUnitsPerShaderArray;
    } else if (has_arm_cores) {
        info.compute_units = arm_cores.shaderCoreCount;
    }

    VkPhysicalDeviceMemoryProperties mem{};
    vkGetPhysicalDeviceMemoryProperties(device, &mem);
    for (std::uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
        MemoryHeapInfo heap{.size = mem.memoryHeaps[h].size,
                            .device_local = (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0};
        for (std::uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
            if (mem.memoryTypes[t].heapIndex == h &&
                (mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0) {
                heap.host_visible = true;
            }
        }
        info.memory_heaps.push_back(heap);
    }

    info.storage_16bit = storage16.storageBuffer16BitAccess == VK_TRUE;
    info.storage_8bit = has_storage8 && storage8.storageBuffer8BitAccess == VK_TRUE;
    info.float16_arithmetic = has_f16i8 && f16i8.shaderFloat16 == VK_TRUE;
    info.int8_arithmetic = has_f16i8 && f16i8.shaderInt8 == VK_TRUE;
    info.int64 = features.features.shaderInt64 == VK_TRUE;
    info.integer_dot_product = has_int_dot && int_dot.shaderIntegerDotProduct == VK_TRUE;
    info.cooperative_matrix_nv = has_coopmat;
    info.cooperative_matrix = has_coopmat && coopmat_features.cooperativeMatrix == VK_TRUE &&
                              (coopmat_props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                              has_memory_model && memory_model.vulkanMemoryModel == VK_TRUE &&
                              memory_model.vulkanMemoryModelDeviceScope == VK_TRUE && info.float16_arithmetic;
    if (has_coopmat) {
        info.cooperative_matrix_shapes = cooperative_matrix_shapes(device);
    }
    info.pipeline_creation_feedback = v13 || has(exts, VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
    info.memory_budget = has(exts, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

    // The first queue family with compute; prefer one without graphics (async compute).
    std::uint32_t family_count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(device, &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    vkGetPhysicalDeviceQueueFamilyProperties(device, &family_count, families.data());
    std::uint32_t chosen = UINT32_MAX;
    for (std::uint32_t f = 0; f < family_count; ++f) {
        if ((families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) {
            continue;
        }
        if (chosen == UINT32_MAX || ((families[chosen].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
                                     !(families[f].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
                                     families[f].timestampValidBits >= families[chosen].timestampValidBits)) {
            chosen = f;
        }
    }
    info.compute_queue_family = chosen;
    if (chosen != UINT32_MAX) {
        info.timestamp_valid_bits = families[chosen].timestampValidBits;
        info.timestamps = info.timestamp_valid_bits > 0 && l.timestampPeriod > 0.0f;
    }
    info.timestamp_period_ns = l.timestampPeriod;
    return info;
}

}  // namespace vkf
