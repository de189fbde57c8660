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
    std::vector<std::string> reasons;  // one line per matched table entry, for vkf-info
};

struct QuirkEntry {
    std::uint32_t vendor_id;                        // required
    std::uint32_t device_id = 0;                    // 0: any device of the vendor
    std::uint32_t driver_id = 0;                    // VkDriverId; 0: any driver
    std::uint32_t min_driver_version = 0;           // inclusive, raw driverVersion
    std::uint32_t max_driver_version = UINT32_MAX;  // inclusive
    bool avoid_fp16_arithmetic = false;
    bool avoid_subgroup_ops = false;
    std::uint32_t max_loop_iterations = 0;
    const char* reason = "";
};

DriverQuirks quirks_for(const DeviceInfo& info);
// Exposed so tests can check the matching rules with their own table.
DriverQuirks quirks_for(const DeviceInfo& info, const std::vector<QuirkEntry>& table);

}  // namespace vkf
