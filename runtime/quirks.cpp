#include "runtime/quirks.hpp"

namespace vkf {

namespace {

// Each entry is a confirmed driver problem and says why.
const std::vector<QuirkEntry>& quirk_table() {
    static const std::vector<QuirkEntry> table{
        {.vendor_id = 0x10005,  // Mesa
         .driver_id = VK_DRIVER_ID_MESA_LLVMPIPE,
         .max_loop_iterations = 65535,
         .reason = "llvmpipe/lavapipe caps the loop iterations of one invocation at 65535 and silently skips "
                   "the rest (gallivm's loop limiter); seen on Mesa 22.3 as wrong attention at long KV"},
    };
    return table;
}

}  // namespace

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
        if (e.max_loop_iterations != 0 &&
            (quirks.max_loop_iterations == 0 || e.max_loop_iterations < quirks.max_loop_iterations)) {
            quirks.max_loop_iterations = e.max_loop_iterations;
        }
        quirks.reasons.emplace_back(e.reason);
    }
    return quirks;
}

DriverQuirks quirks_for(const DeviceInfo& info) {
    return quirks_for(info, quirk_table());
}

}  // namespace vkf
