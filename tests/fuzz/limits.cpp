// Fuzzes the environment values: VKF_TIMEOUT_MS and --timeout (parse_timeout_ms,
// runtime/timeout.hpp: an accepted value is within [1 ms, kMaxTimeout], prints back to the
// same value and converts to nanoseconds without overflow), VKF_LIMITS and --limits
// (LimitOverrides::parse, runtime/limits.hpp) and the size
// parser under it (parse_byte_size, also behind --max-memory and the like). Accepted
// overrides must describe themselves in a form that parses back to the same overrides,
// merge with the phone preset, and lower a device's limits (effective_limits) without
// raising any.

#include "runtime/limits.hpp"
#include "runtime/timeout.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace {

// A device like lavapipe's, with generous limits for the overrides to lower.
vkf::DeviceInfo device() {
    vkf::DeviceInfo info;
    info.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
    info.type = vkf::DeviceType::Cpu;
    info.vendor_id = 0x10005;
    info.driver_id = 13;  // VK_DRIVER_ID_MESA_LLVMPIPE
    info.api_version = (1u << 22) | (3u << 12);
    info.subgroup_size = 8;
    info.min_subgroup_size = 8;
    info.max_subgroup_size = 8;
    info.subgroup_in_compute = true;
    info.subgroup_ops = {.basic = true, .vote = true, .arithmetic = true, .ballot = true, .shuffle = true};
    info.max_shared_memory = 65536;
    info.max_workgroup_size = {1024, 1024, 1024};
    info.max_workgroup_invocations = 1024;
    info.max_workgroup_count = {65535, 65535, 65535};
    info.max_push_constants = 256;
    info.max_per_stage_storage_buffers = 1000000;
    info.max_descriptor_set_storage_buffers = 1000000;
    info.max_storage_buffer_range = 2147483648ull;
    info.min_storage_buffer_offset_alignment = 16;
    info.storage_16bit = true;
    info.float16_arithmetic = true;
    info.int64 = true;
    info.timestamps = true;
    return info;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    static const DeviceInfo info = device();
    static const ComputeLimits base = effective_limits(info, quirks_for(info), {});
    const std::string_view text = fuzz::as_text(data, size);
    if (const std::optional<std::uint64_t> bytes = parse_byte_size(text)) {
        fuzz::check(*bytes > 0, "a parsed size is positive");
    }
    fuzz::run_parser([&] {
        const std::chrono::milliseconds timeout = parse_timeout_ms(text, "VKF_TIMEOUT_MS");
        fuzz::check(timeout.count() >= 1 && timeout <= kMaxTimeout, "an accepted timeout is within its range");
        fuzz::check(text.find_first_not_of("0123456789") == std::string_view::npos,
                    "an accepted timeout is digits only");
        fuzz::check(parse_timeout_ms(std::to_string(timeout.count()), "VKF_TIMEOUT_MS") == timeout,
                    "an accepted timeout prints back to itself");
        fuzz::check(timeout_nanoseconds(timeout) / 1000000 == static_cast<std::uint64_t>(timeout.count()),
                    "the nanoseconds do not overflow");
    });
    fuzz::run_parser([&] {
        const LimitOverrides overrides = LimitOverrides::parse(text);
        const std::string described = overrides.describe();
        fuzz::check(overrides.empty() == (described == "none"), "describe says none exactly when empty");
        if (!overrides.empty()) {
            fuzz::check(LimitOverrides::parse(described).describe() == described,
                        "describe() parses back to the same overrides");
        }
        fuzz::check(LimitOverrides::phone().merged_with(overrides).merged_with(overrides).describe() ==
                        LimitOverrides::phone().merged_with(overrides).describe(),
                    "merging the same overrides twice changes nothing");
        const ComputeLimits limits = effective_limits(info, quirks_for(info), overrides);
        fuzz::check(limits.shared_memory <= base.shared_memory &&
                        limits.workgroup_invocations <= base.workgroup_invocations &&
                        limits.storage_buffer_range <= base.storage_buffer_range &&
                        limits.push_constants <= base.push_constants && limits.storage_buffers <= base.storage_buffers,
                    "overrides only lower limits");
        for (int d = 0; d < 3; ++d) {
            fuzz::check(limits.workgroup_size[d] <= base.workgroup_size[d] &&
                            limits.workgroup_size[d] <= limits.workgroup_invocations,
                        "the workgroup size stays within the device's and the invocations");
        }
    });
    return 0;
}
