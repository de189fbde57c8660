// The C API's devices and contexts.
#include "capi/capi_internal.hpp"

#include "runtime/device.hpp"
#include "runtime/instance.hpp"
#include "runtime/limits.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf::capi {
namespace {

constexpr std::size_t kContextParamsV1 = VKF_V1_SIZE(vkf_context_params, vk_compute_full_subgroups);
constexpr std::size_t kDeviceInfoV1 = VKF_V1_SIZE(vkf_device_info, memory_available_bytes);

vkf_device_info describe(const DeviceInfo& d) {
    vkf_device_info info{};
    info.struct_size = sizeof info;
    info.index = d.index;
    copy_string(info.name, sizeof info.name, d.name);
    copy_string(info.driver_name, sizeof info.driver_name, d.driver_name);
    info.type = static_cast<std::uint32_t>(d.type);  // DeviceType's order is vkf_device_type's
    info.vendor_id = d.vendor_id;
    info.device_id = d.device_id;
    info.api_version = d.api_version;
    info.max_shared_memory = d.max_shared_memory;
    info.max_workgroup_invocations = d.max_workgroup_invocations;
    std::copy(d.max_workgroup_size.begin(), d.max_workgroup_size.end(), info.max_workgroup_size);
    std::copy(d.max_workgroup_count.begin(), d.max_workgroup_count.end(), info.max_workgroup_count);
    info.max_push_constants = d.max_push_constants;
    info.max_storage_buffers = std::min(d.max_per_stage_storage_buffers, d.max_descriptor_set_storage_buffers);
    info.max_storage_buffer_range = d.max_storage_buffer_range;
    info.subgroup_size = d.subgroup_size;
    info.compute_units = d.compute_units;
    for (const MemoryHeapInfo& heap : d.memory_heaps) {
        if (heap.device_local) {
            info.device_local_bytes = std::max(info.device_local_bytes, heap.size);
        }
    }
    return info;
}

std::vector<DeviceInfo> devices() {
    // No validation layer and no messages: listing devices reports nothing.
    const Instance instance(
        InstanceOptions{.validation = false, .on_message = [](MessageSeverity, std::string_view) {}});
    return list_devices(instance);
}

}  // namespace
}  // namespace vkf::capi

using namespace vkf::capi;

extern "C" {

VKF_API vkf_status vkf_device_count(uint32_t* count) {
    return guarded(__func__, [&] {
        out_ptr(count, "count");
        *count = static_cast<std::uint32_t>(devices().size());
    });
}

VKF_API vkf_status vkf_device_get_info(uint32_t index, vkf_device_info* info) {
    return guarded(__func__, [&] {
        out_ptr(info, "info");
        const std::vector<vkf::DeviceInfo> all = devices();
        require(index < all.size(), "device index " + fmt::to_string(index) + " is out of range (" +
                                        fmt::to_string(all.size()) + " devices)");
        write_out(info, describe(all[index]), kDeviceInfoV1, "info");
    });
}

VKF_API vkf_status vkf_context_create(const vkf_context_params* given, vkf_context** out) {
    return guarded(__func__, [&] {
        out_ptr(out, "out");
        const vkf_context_params p = read_params(given, vkf_context_default_params(), kContextParamsV1, "params");
        vkf::ContextOptions options;
        if (p.validation >= 0) {
            options.validation = p.validation != 0;
        }
        if (p.device_name != nullptr) {
            options.device = std::string(p.device_name);
        } else if (p.device_index >= 0) {
            options.device = fmt::to_string(p.device_index);
        }
        if (p.limits != nullptr) {
            try {
                options.limits = vkf::LimitOverrides::parse(p.limits);
            } catch (const vkf::Error& e) {
                throw ApiError(VKF_ERROR_INVALID_ARGUMENT, std::string("params.limits: ") + e.what());
            }
        }
        if (p.pipeline_cache_dir != nullptr) {
            options.pipeline_cache_dir = std::filesystem::path(p.pipeline_cache_dir);
        }
        if (p.timeout_ms != 0) {
            options.timeout = std::chrono::milliseconds(p.timeout_ms);
        }
        if (p.log != nullptr) {
            options.on_message = [log = p.log, user = p.log_user_data](vkf::MessageSeverity severity,
                                                                       std::string_view message) {
                const std::string text(message);
                log(static_cast<vkf_log_level>(severity), text.c_str(), user);  // same order
            };
        }
        const int external = (p.vk_instance != nullptr) + (p.vk_physical_device != nullptr) + (p.vk_device != nullptr) +
                             (p.vk_queue != nullptr);
        require(external == 0 || external == 4,
                "params: vk_instance, vk_physical_device, vk_device and vk_queue are given all or none");
        if (external == 4) {
            options.external_instance = static_cast<VkInstance>(p.vk_instance);
            if (p.vk_api_version != 0) {
                options.external_api_version = p.vk_api_version;
            }
            vkf::ExternalDevice device;
            device.physical_device = static_cast<VkPhysicalDevice>(p.vk_physical_device);
            device.device = static_cast<VkDevice>(p.vk_device);
            device.queue = static_cast<VkQueue>(p.vk_queue);
            device.queue_family = p.vk_queue_family;
            device.enabled = {.storage_16bit = p.vk_storage_16bit != 0,
                              .storage_8bit = p.vk_storage_8bit != 0,
                              .float16_arithmetic = p.vk_float16 != 0,
                              .int8_arithmetic = p.vk_int8 != 0,
                              .int64 = p.vk_int64 != 0,
                              .integer_dot_product = p.vk_integer_dot_product != 0,
                              .subgroup_size_control = p.vk_subgroup_size_control != 0,
                              .compute_full_subgroups = p.vk_compute_full_subgroups != 0};
            options.external_device = device;
        }
        auto state = std::make_shared<ContextState>();
        try {
            state->context = std::make_unique<vkf::Context>(std::move(options));
        } catch (const vkf::OutOfMemoryError&) {
            throw;
        } catch (const vkf::DeviceLostError&) {
            throw;
        } catch (const vkf::Error& e) {
            throw ApiError(VKF_ERROR_UNSUPPORTED, e.what());  // no loader, no device, no such device
        }
        auto handle = std::make_unique<vkf_context>();
        handle->state = std::move(state);
        register_handle(handle.get(), Kind::Context);
        *out = handle.release();
    });
}

VKF_API vkf_status vkf_context_free(vkf_context* ctx) {
    return guarded(__func__, [&] {
        if (ctx != nullptr) {
            unregister_handle(ctx, Kind::Context, "vkf_context");
            delete ctx;  // the Context itself lives on while a model or encoder holds it
        }
    });
}

VKF_API vkf_status vkf_context_get_device_info(const vkf_context* ctx, vkf_device_info* info) {
    return guarded(__func__, [&] {
        const vkf::Context& c = *live(ctx, Kind::Context, "vkf_context").state->context;
        out_ptr(info, "info");
        vkf_device_info d = describe(c.device_info());
        const vkf::ComputeLimits& l = c.limits();
        d.max_shared_memory = l.shared_memory;
        d.max_workgroup_invocations = l.workgroup_invocations;
        std::copy(l.workgroup_size.begin(), l.workgroup_size.end(), d.max_workgroup_size);
        std::copy(l.workgroup_count.begin(), l.workgroup_count.end(), d.max_workgroup_count);
        d.max_push_constants = l.push_constants;
        d.max_storage_buffers = l.storage_buffers;
        d.max_storage_buffer_range = l.storage_buffer_range;
        d.subgroup_size = l.subgroup_size;
        d.compute_units = l.compute_units;
        d.fp16_storage = l.fp16_storage;
        d.fp16_arithmetic = l.fp16_arithmetic;
        d.integer_dot_product = l.integer_dot_product;
        d.memory_available_bytes = c.memory_budget().available();
        write_out(info, d, kDeviceInfoV1, "info");
    });
}

}  // extern "C"
