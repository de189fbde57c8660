#include "runtime/device_info_json.hpp"

#include <array>
#include <span>

namespace vkf {

namespace {

template <class T, std::size_t N>
void write_array(JsonWriter& json, std::string_view name, const std::array<T, N>& values) {
    json.key(name).begin_array();
    for (const T& v : values) {
        json.value(v);
    }
    json.end_array();
}

void write_uuid(JsonWriter& json, std::string_view name, const std::array<std::uint8_t, VK_UUID_SIZE>& uuid) {
    json.field(name, hex_bytes(uuid.data(), uuid.size()));
}

void write_subgroup_ops(JsonWriter& json, const SubgroupOps& ops) {
    json.begin_object()
        .field("basic", ops.basic)
        .field("vote", ops.vote)
        .field("arithmetic", ops.arithmetic)
        .field("ballot", ops.ballot)
        .field("shuffle", ops.shuffle)
        .field("shuffle_relative", ops.shuffle_relative)
        .field("clustered", ops.clustered)
        .field("quad", ops.quad)
        .end_object();
}

void write_heaps(JsonWriter& json, std::span<const MemoryHeapInfo> heaps) {
    json.begin_array();
    for (const MemoryHeapInfo& heap : heaps) {
        json.begin_object()
            .field("size", heap.size)
            .field("device_local", heap.device_local)
            .field("host_visible", heap.host_visible)
            .end_object();
    }
    json.end_array();
}

} // namespace

void write_json(JsonWriter& json, const DeviceInfo& info) {
    json.begin_object();
    write_json_members(json, info);
    json.end_object();
}

void write_json_members(JsonWriter& json, const DeviceInfo& info) {
    json.field("index", info.index)
        .field("name", info.name)
        .field("type", to_string(info.type))
        .field("vendor_id", info.vendor_id)
        .field("device_id", info.device_id)
        .field("vendor_name", info.vendor_name)
        // The string for people, the raw number for programs that compare versions.
        .field("api_version", format_version(info.api_version))
        .field("api_version_raw", info.api_version)
        .field("driver_version", info.driver_version)
        .field("driver_version_text", info.driver_version_text)
        .field("driver_id", info.driver_id)
        .field("driver_name", info.driver_name)
        .field("driver_info", info.driver_info);
    write_uuid(json, "device_uuid", info.device_uuid);
    write_uuid(json, "driver_uuid", info.driver_uuid);
    write_uuid(json, "pipeline_cache_uuid", info.pipeline_cache_uuid);

    json.field("subgroup_size", info.subgroup_size)
        .field("min_subgroup_size", info.min_subgroup_size)
        .field("max_subgroup_size", info.max_subgroup_size)
        .field("subgroup_size_control", info.subgroup_size_control)
        .field("subgroup_in_compute", info.subgroup_in_compute);
    json.key("subgroup_ops");
    write_subgroup_ops(json, info.subgroup_ops);

    json.field("max_shared_memory", info.max_shared_memory);
    write_array(json, "max_workgroup_size", info.max_workgroup_size);
    json.field("max_workgroup_invocations", info.max_workgroup_invocations);
    write_array(json, "max_workgroup_count", info.max_workgroup_count);
    json.field("max_push_constants", info.max_push_constants)
        .field("max_storage_buffer_range", info.max_storage_buffer_range)
        .field("min_storage_buffer_offset_alignment", info.min_storage_buffer_offset_alignment)
        .field("max_memory_allocation_count", info.max_memory_allocation_count)
        .field("max_memory_allocation_size", info.max_memory_allocation_size);
    json.key("memory_heaps");
    write_heaps(json, info.memory_heaps);

    json.field("storage_16bit", info.storage_16bit)
        .field("storage_8bit", info.storage_8bit)
        .field("float16_arithmetic", info.float16_arithmetic)
        .field("int8_arithmetic", info.int8_arithmetic)
        .field("cooperative_matrix_nv", info.cooperative_matrix_nv)
        .field("pipeline_creation_feedback", info.pipeline_creation_feedback)
        .field("timestamps", info.timestamps)
        .field("timestamp_valid_bits", info.timestamp_valid_bits)
        .field("timestamp_period_ns", info.timestamp_period_ns);
    // UINT32_MAX marks "no compute queue" in the struct; null says so without a magic number.
    json.key("compute_queue_family");
    if (info.compute_queue_family == UINT32_MAX) {
        json.null();
    } else {
        json.value(info.compute_queue_family);
    }
}

void write_json(JsonWriter& json, const ComputeLimits& limits) {
    json.begin_object();
    json.field("shared_memory", limits.shared_memory).field("workgroup_invocations", limits.workgroup_invocations);
    write_array(json, "workgroup_size", limits.workgroup_size);
    write_array(json, "workgroup_count", limits.workgroup_count);
    json.field("push_constants", limits.push_constants)
        .field("storage_buffer_range", limits.storage_buffer_range)
        .field("storage_offset_alignment", limits.storage_offset_alignment)
        .field("subgroup_size", limits.subgroup_size)
        .field("fp16_storage", limits.fp16_storage)
        .field("fp16_arithmetic", limits.fp16_arithmetic)
        .field("subgroup_ops", limits.subgroup_ops)
        .field("timestamps", limits.timestamps)
        .field("max_loop_iterations", limits.max_loop_iterations)
        .field("forced", limits.forced);
    json.end_object();
}

void write_json(JsonWriter& json, const DriverQuirks& quirks) {
    json.begin_object()
        .field("avoid_fp16_arithmetic", quirks.avoid_fp16_arithmetic)
        .field("avoid_subgroup_ops", quirks.avoid_subgroup_ops)
        .key("reasons")
        .begin_array();
    for (const std::string& reason : quirks.reasons) {
        json.value(reason);
    }
    json.end_array().end_object();
}

} // namespace vkf
