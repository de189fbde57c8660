#include "runtime/quirks.hpp"

#include <cstdio>

namespace vkf {

namespace {

// Each entry is a confirmed driver problem and says why.
const std::vector<QuirkEntry>& quirk_table() {
    static const std::vector<QuirkEntry> table{
        {.vendor_id = 0x10005,  // Mesa
         .driver_id = VK_DRIVER_ID_MESA_LLVMPIPE,
         .max_driver_version = VK_MAKE_API_VERSION(0, 24, 1023, 4095),
         .max_loop_iterations = 65535,
         .reason = "llvmpipe/lavapipe caps the loop iterations of one invocation at 65535 and silently skips "
                   "the rest (gallivm's loop limiter); seen on Mesa 22.3 as wrong attention at long KV, not "
                   "on 25.0.7 (the long-KV attention and long-K matmul tests pass there unsplit)"},
        {.vendor_id = 0x10005,  // Mesa
         .driver_id = VK_DRIVER_ID_MESA_LLVMPIPE,
         .min_driver_version = VK_MAKE_API_VERSION(0, 25, 0, 0),
         .avoid_loop_unrolling = true,
         .reason = "llvmpipe/lavapipe 25 compiles fully unrolled kernels 5-30x slower than 22.3 (LLVM, at a "
                   "pipeline's first dispatch: 12 s for one attention pipeline); kernels run with their unroll "
                   "hints off (measured on 25.0.7; 23.x and 24.x untested)"},
    };
    return table;
}

}  // namespace

std::uint32_t effective_driver_version(const DeviceInfo& info) {
    const bool mesa = info.driver_id == VK_DRIVER_ID_MESA_LLVMPIPE || info.driver_id == VK_DRIVER_ID_MESA_RADV ||
                      info.driver_id == VK_DRIVER_ID_INTEL_OPEN_SOURCE_MESA ||
                      info.driver_id == VK_DRIVER_ID_MESA_TURNIP || info.driver_id == VK_DRIVER_ID_MESA_V3DV ||
                      info.driver_id == VK_DRIVER_ID_MESA_PANVK || info.driver_id == VK_DRIVER_ID_MESA_VENUS ||
                      info.driver_id == VK_DRIVER_ID_MESA_DOZEN;
    if (!mesa) {
        return info.driver_version;
    }
    unsigned major = 0, minor = 0, patch = 0;
    if (std::sscanf(info.driver_info.c_str(), "Mesa %u.%u.%u", &major, &minor, &patch) < 2 || major > 1023 ||
        minor > 1023 || patch > 4095) {
        return 0;
    }
    return VK_MAKE_API_VERSION(0, major, minor, patch);
}

DriverQuirks quirks_for(const DeviceInfo& info, const std::vector<QuirkEntry>& table) {
    DriverQuirks quirks;
    const std::uint32_t version = effective_driver_version(info);
    for (const QuirkEntry& e : table) {
        const bool match = e.vendor_id == info.vendor_id && (e.device_id == 0 || e.device_id == info.device_id) &&
                           (e.driver_id == 0 || e.driver_id == info.driver_id) && version >= e.min_driver_version &&
                           version <= e.max_driver_version;
        if (!match) {
            continue;
        }
        quirks.avoid_fp16_arithmetic |= e.avoid_fp16_arithmetic;
        quirks.avoid_subgroup_ops |= e.avoid_subgroup_ops;
        quirks.avoid_loop_unrolling |= e.avoid_loop_unrolling;
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
