#pragma once
// The limits vkformer's kernels respect: the device's own, lowered by driver quirks and by
// overrides. Overrides let lavapipe run the configurations a phone would get (tests) and
// let users work around a driver (VKF_LIMITS).

#include "runtime/device_info.hpp"
#include "runtime/quirks.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace vkf {

struct LimitOverrides {
    std::optional<std::uint32_t> shared_memory;
    std::optional<std::uint32_t> workgroup_invocations;
    std::optional<std::uint32_t> workgroup_count;  // per dimension
    std::optional<std::uint64_t> storage_buffer_range;
    std::optional<std::uint32_t> push_constants;
    bool no_fp16_storage = false;
    bool no_fp16_arithmetic = false;
    bool no_subgroup_ops = false;
    bool no_int64 = false;
    bool no_integer_dot = false;

    // "phone" (a preset), or comma-separated keys: shared_memory=N, workgroup_invocations=N,
    // workgroup_count=N, storage_buffer_range=N, push_constants=N, no_fp16_storage,
    // no_fp16_arithmetic, no_subgroup_ops, no_int64, no_integer_dot. Sizes accept K/M/G suffixes. Throws on bad input.
    static LimitOverrides parse(std::string_view spec);
    static LimitOverrides phone();
    bool empty() const;
    std::string describe() const;
    // Later values win where both set a limit.
    LimitOverrides merged_with(const LimitOverrides& other) const;
};

// "512", "64K", "128M", "2G" (binary suffixes, either case) as bytes; nullopt for anything
// else, for 0 and for sizes past 2^64.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

struct ComputeLimits {
    std::uint32_t shared_memory = 0;
    std::uint32_t workgroup_invocations = 0;
    std::array<std::uint32_t, 3> workgroup_size{};
    std::array<std::uint32_t, 3> workgroup_count{};
    std::uint32_t push_constants = 0;
    std::uint64_t storage_buffer_range = 0;
    std::uint64_t storage_offset_alignment = 0;
    std::uint32_t subgroup_size = 0;
    bool fp16_storage = false;
    bool fp16_arithmetic = false;
    bool subgroup_ops = false;         // basic + arithmetic + shuffle in compute shaders
    bool int64 = false;                // 64-bit integers in shaders (shaderInt64)
    bool integer_dot_product = false;  // packed 4x8-bit integer dot products (shaderIntegerDotProduct)
    bool timestamps = false;
    std::uint32_t max_loop_iterations = 0;  // per invocation, from driver quirks; 0: unlimited
    bool forced = false;                    // some override lowered a limit
};

ComputeLimits effective_limits(const DeviceInfo& info, const DriverQuirks& quirks, const LimitOverrides& overrides);

}  // namespace vkf
