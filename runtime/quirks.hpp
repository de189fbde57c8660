#pragma once
// Known driver problems, in one table keyed on vendor, device and driver IDs and driver
// version ranges (never on device-name strings). A matching entry turns fast paths off.

#include "runtime/device_info.hpp"

#include <string>
#include <vector>

namespace vkf {

struct DriverQuirks {
    bool avoid_fp16_arithmetic = false;
    bool avoid_subgroup_ops = false;
    // Loop iterations one shader invocation may run in all (0: no limit). Past it a driver
    // silently skips iterations, so kernels must bound their loops (e.g. split the KV).
    std::uint32_t max_loop_iterations = 0;
    // Compiling fully unrolled loops costs the driver seconds per pipeline: pipelines are
    // made with the kernels' unroll hints turned into "do not unroll" (runtime/spirv_loop_control.hpp).
    bool avoid_loop_unrolling = false;
    std::vector<std::string> reasons;  // one line per matched table entry, for vkf-info
};

struct QuirkEntry {
    std::uint32_t vendor_id;      // required
    std::uint32_t device_id = 0;  // 0: any device of the vendor
    std::uint32_t driver_id = 0;  // VkDriverId; 0: any driver
    // Inclusive, in effective_driver_version's encoding: the raw driverVersion, except for
    // Mesa's drivers, whose version is read from driverInfo (lavapipe reports driverVersion 1
    // in every release).
    std::uint32_t min_driver_version = 0;
    std::uint32_t max_driver_version = UINT32_MAX;
    bool avoid_fp16_arithmetic = false;
    bool avoid_subgroup_ops = false;
    std::uint32_t max_loop_iterations = 0;
    bool avoid_loop_unrolling = false;
    const char* reason = "";
};

// The driver version quirk entries compare: for Mesa's drivers VK_MAKE_API_VERSION(0, X, Y, Z)
// of the "Mesa X.Y.Z" that starts driverInfo (0 when it does not parse), else driverVersion.
std::uint32_t effective_driver_version(const DeviceInfo& info);

DriverQuirks quirks_for(const DeviceInfo& info);
// Exposed so tests can check the matching rules with their own table.
DriverQuirks quirks_for(const DeviceInfo& info, const std::vector<QuirkEntry>& table);

}  // namespace vkf
