#include "runtime/quirks.hpp"

namespace vkf {

namespace {

// Empty until a driver problem is confirmed on real hardware; each entry says why.
const std::vector<QuirkEntry>& quirk_table() {
    static const std::vector<QuirkEntry> table{};
    return table;
}

} // namespace

DriverQuirks quirks_for(const DeviceInfo& info, const std::vector<QuirkEntry>& table) {
    DriverQuirks quirks;
    for (const QuirkEntry& e : table) {
        const bool match = e.vendor_id == info.vendor_id && (e.device_id == 0 || e.device_id == info.device_id) &&
                           (e.driver_id == 0 || e.driver_id == info.driver_id) &&
                           info.driver_version >= e.min_driver_version && info.driver_version <= e.max_driver_version;
        if (!match) {
            continue;
        }
        quirks.avoid_fp16_arithmetic |= e.avoid_fp16_arithmetic;
        quirks.avoid_subgroup_ops |= e.avoid_subgroup_ops;
        quirks.reasons.emplace_back(e.reason);
    }
    return quirks;
}

DriverQuirks quirks_for(const DeviceInfo& info) { return quirks_for(info, quirk_table()); }

} // namespace vkf
