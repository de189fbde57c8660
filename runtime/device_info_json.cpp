#include "runtime/device_info_json.hpp"

#include <fmt/format.h>

namespace vkf {

namespace {

// "16x16x16 f32": M x N x K and the accumulator type.
nlohmann::ordered_json coopmat_shapes(const std::vector<CoopMatShape>& shapes) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const CoopMatShape& s : shapes) {
        out.push_back(fmt::to_string(s.m) + "x" + fmt::to_string(s.n) + "x" + fmt::to_string(s.k) +
                      (s.acc_f32 ? " f32" : " f16"));
    }
    return out;
}

}  // namespace

void to_json(nlohmann::ordered_json& json, const DeviceInfo& info) {
    nlohmann::ordered_json heaps = nlohmann::ordered_json::array();
    for (const MemoryHeapInfo& heap : info.memory_heaps) {
        heaps.push_back(
            {{"size", heap.size}, {"device_local", heap.device_local}, {"host_visible", heap.host_visible}});
    }
    const SubgroupOps& ops = info.subgroup_ops;
    json = {
        {"index", info.index},
        {"name", info.name},
        {"type", to_string(info.type)},
        {"vendor_id", info.vendor_id},
        {"device_id", info.device_id},
        {"vendor_name", info.vendor_name},
        // The string for people, the raw number for programs that compare versions.
        {"api_version", format_version(info.api_version)},
        {"api_version_raw", info.api_version},
        {"driver_version", info.driver_version},
        {"driver_version_text", info.driver_version_text},
        {"driver_id", info.driver_id},
        {"driver_name", info.driver_name},
        {"driver_info", info.driver_info},
        {"device_uuid", hex_bytes(info.device_uuid.data(), info.device_uuid.size())},
        {"driver_uuid", hex_bytes(info.driver_uuid.data(), info.driver_uuid.size())},
        {"pipeline_cache_uuid", hex_bytes(info.pipeline_cache_uuid.data(), info.pipeline_cache_uuid.size())},
        {"subgroup_size", info.subgroup_size},
        {"min_subgroup_size", info.min_subgroup_size},
        {"max_subgroup_size", info.max_subgroup_size},
        {"subgroup_size_control", info.subgroup_size_control},
        {"compute_full_subgroups", info.compute_full_subgroups},
        {"max_compute_workgroup_subgroups", info.max_compute_workgroup_subgroups},
        {"subgroup_in_compute", info.subgroup_in_compute},
        {"subgroup_ops",
         {{"basic", ops.basic},
          {"vote", ops.vote},
          {"arithmetic", ops.arithmetic},
          {"ballot", ops.ballot},
          {"shuffle", ops.shuffle},
          {"shuffle_relative", ops.shuffle_relative},
          {"clustered", ops.clustered},
          {"quad", ops.quad}}},
        {"max_shared_memory", info.max_shared_memory},
        {"max_workgroup_size", info.max_workgroup_size},
        {"max_workgroup_invocations", info.max_workgroup_invocations},
        {"max_workgroup_count", info.max_workgroup_count},
        {"max_push_constants", info.max_push_constants},
        {"max_per_stage_storage_buffers", info.max_per_stage_storage_buffers},
        {"max_descriptor_set_storage_buffers", info.max_descriptor_set_storage_buffers},
        {"max_storage_buffer_range", info.max_storage_buffer_range},
        {"min_storage_buffer_offset_alignment", info.min_storage_buffer_offset_alignment},
        {"max_memory_allocation_count", info.max_memory_allocation_count},
        {"max_memory_allocation_size", info.max_memory_allocation_size},
        {"memory_heaps", heaps},
        // 0 (unknown) as null, like the queue family below.
        {"compute_units",
         info.compute_units == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(info.compute_units)},
        {"memory_budget", info.memory_budget},
        {"storage_16bit", info.storage_16bit},
        {"storage_8bit", info.storage_8bit},
        {"float16_arithmetic", info.float16_arithmetic},
        {"int8_arithmetic", info.int8_arithmetic},
        {"integer_dot_product", info.integer_dot_product},
        {"cooperative_matrix_nv", info.cooperative_matrix_nv},
        {"cooperative_matrix", info.cooperative_matrix},
        {"cooperative_matrix_shapes", coopmat_shapes(info.cooperative_matrix_shapes)},
        {"pipeline_creation_feedback", info.pipeline_creation_feedback},
        {"timestamps", info.timestamps},
        {"timestamp_valid_bits", info.timestamp_valid_bits},
        {"timestamp_period_ns", info.timestamp_period_ns},
        // UINT32_MAX marks "no compute queue" in the struct; null says so without a magic number.
        {"compute_queue_family", info.compute_queue_family == UINT32_MAX
                                     ? nlohmann::ordered_json(nullptr)
                                     : nlohmann::ordered_json(info.compute_queue_family)},
    };
}

void to_json(nlohmann::ordered_json& json, const ComputeLimits& limits) {
    json = {
        {"shared_memory", limits.shared_memory},
        {"workgroup_invocations", limits.workgroup_invocations},
        {"workgroup_size", limits.workgroup_size},
        {"workgroup_count", limits.workgroup_count},
        {"push_constants", limits.push_constants},
        {"storage_buffer_range", limits.storage_buffer_range},
        {"storage_offset_alignment", limits.storage_offset_alignment},
        {"storage_buffers", limits.storage_buffers},
        {"subgroup_size", limits.subgroup_size},
        {"fp16_storage", limits.fp16_storage},
        {"fp16_arithmetic", limits.fp16_arithmetic},
        {"subgroup_ops", limits.subgroup_ops},
        {"subgroup_size_control", limits.subgroup_size_control},
        {"integer_dot_product", limits.integer_dot_product},
        {"coopmat_shapes", coopmat_shapes(limits.coopmat_shapes)},
        {"prefer_coopmat", limits.prefer_coopmat},
        {"coopmat_emulated", limits.coopmat_emulated},
        {"compute_units",
         limits.compute_units == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(limits.compute_units)},
        {"timestamps", limits.timestamps},
        {"max_loop_iterations", limits.max_loop_iterations},
        {"loop_unrolling", limits.loop_unrolling},
        {"forced", limits.forced},
    };
}

void to_json(nlohmann::ordered_json& json, const DriverQuirks& quirks) {
    json = {
        {"avoid_fp16_arithmetic", quirks.avoid_fp16_arithmetic},
        {"avoid_subgroup_ops", quirks.avoid_subgroup_ops},
        {"avoid_loop_unrolling", quirks.avoid_loop_unrolling},
        {"reasons", quirks.reasons},
    };
}

}  // namespace vkf
