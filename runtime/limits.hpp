#pragma once
// The limits vkformer's kernels respect: the device's own, lowered by driver quirks and by
// overrides. Overrides let lavapipe run the configurations a phone would get (tests) and
// let users work around a driver (VKF_LIMITS).

#include "runtime/device_info.hpp"
#include "runtime/quirks.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

struct LimitOverrides {
    std::optional<std::uint32_t> shared_memory;
    std::optional<std::uint32_t> workgroup_invocations;
    std::optional<std::uint32_t> workgroup_count;  // per dimension
    // maxComputeWorkGroupSize (x, y, z); the lower of it and workgroup_invocations applies.
    std::optional<std::array<std::uint32_t, 3>> workgroup_size;
    std::optional<std::uint64_t> storage_buffer_range;
    std::optional<std::uint32_t> push_constants;
    std::optional<std::uint32_t> storage_buffers;  // per shader stage (and per descriptor set)
    // Unlike the others not a limit but what the plans size their parallelism by: sets the
    // count where the device reports none, lowers the one it reports.
    std::optional<std::uint32_t> compute_units;
    bool no_fp16_storage = false;
    bool no_fp16_arithmetic = false;
    bool no_subgroup_ops = false;
    // No required subgroup sizes, hence no subgroup kernels but the one that checks its
    // subgroups itself (the tiled attention's SUBGROUP_ANY_SIZE).
    bool no_subgroup_size_control = false;
    bool no_int64 = false;
    bool no_integer_dot = false;
    bool no_unroll = false;  // the kernels' unroll hints off, as the llvmpipe 25 quirk does
    // Not a limit: attention planned as on a GPU on a CPU device (the tiled kernel, and fp16
    // arithmetic over fp16 K/V where the device has it), so that lavapipe runs what a GPU's
    // model step runs (tests; host/ops/attention.cpp).
    bool gpu_attention = false;
    // Not a limit: the matmuls planned as on a GPU on a CPU device (the tiled and GEMV kernels,
    // fp16 arithmetic on fp16 weights where the device has it: host/ops/matmul_plan.cpp).
    bool gpu_matmul = false;
    // Not a limit either: the matmul's Auto choice takes the cooperative-matrix (tensor core)
    // kernel where the device has it and the shape fits (host/ops/matmul_coopmat.cpp). Opt-in
    // until a GPU run has proven that kernel: no device has run it yet (docs/DESIGN.md).
    bool coopmat = false;
    // Tests: on a device without cooperative matrices, the cooperative-matrix kernel's
    // EMULATE variant (plain shared-memory arithmetic in the matrices' layout) with this M x N x K,
    // so that lavapipe checks its tiles, indexing, split K and epilogue against the reference.
    std::optional<std::array<std::uint32_t, 3>> coopmat_emulated;
    // Device memory, not compute limits: the MemoryCaps (runtime/memory.hpp) of a Context.
    std::optional<std::uint64_t> device_heap;  // device-local bytes vkformer may use
    std::optional<std::uint64_t> host_heap;    // host-visible bytes Device buffers may fall back to

    // "phone" or "spec_minimum" (presets), or comma-separated keys: shared_memory=N,
    // workgroup_invocations=N, workgroup_size=XxYxZ (or N for all three), workgroup_count=N,
    // storage_buffer_range=N, push_constants=N, storage_buffers=N,
    // compute_units=N, no_fp16_storage, no_fp16_arithmetic, no_subgroup_ops,
    // no_subgroup_size_control, no_int64, no_integer_dot, no_unroll, gpu_attention, gpu_matmul, device_heap=N,
    // host_heap=N,
    // coopmat, coopmat_emulated=MxNxK. Sizes accept K/M/G suffixes. Throws on bad input.
    static LimitOverrides parse(std::string_view spec);
    static LimitOverrides phone();
    // Exactly what every Vulkan 1.1+ device guarantees (the specification's "Required
    // Limits" table, and no optional feature): see limits.cpp.
    static LimitOverrides spec_minimum();
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
    // Storage buffers one pipeline may bind: the lower of maxPerStageDescriptorStorageBuffers
    // and maxDescriptorSetStorageBuffers (vkformer's pipelines have one compute stage and one set).
    std::uint32_t storage_buffers = 0;
    std::uint32_t subgroup_size = 0;
    bool fp16_storage = false;
    bool fp16_arithmetic = false;
    bool subgroup_ops = false;  // basic + arithmetic + shuffle in compute shaders
    // A compute pipeline can require subgroups of exactly subgroup_size and that they be full
    // (subgroupSizeControl and computeFullSubgroups, compute in requiredSubgroupSizeStages).
    // Kernels that use subgroup operations run only where it can (docs/DESIGN.md, portability
    // rules): without it a driver may run fewer lanes than gl_SubgroupSize says (Intel's do).
    // The exception, the tiled attention's SUBGROUP_ANY_SIZE, checks its subgroups at run time.
    bool subgroup_size_control = false;
    bool int64 = false;                // 64-bit integers in shaders (shaderInt64)
    bool integer_dot_product = false;  // packed 4x8-bit integer dot products (shaderIntegerDotProduct)
    std::uint32_t compute_units = 0;   // DeviceInfo::compute_units or its override; 0: unknown
    // Cooperative-matrix shapes with fp16 inputs and fp32 accumulators, in the driver's order:
    // DeviceInfo::cooperative_matrix_shapes where the device was created with cooperative
    // matrices (DeviceInfo::cooperative_matrix) and fp16 arithmetic is allowed; else empty.
    std::vector<CoopMatShape> coopmat_shapes;
    bool prefer_coopmat = false;    // VKF_LIMITS coopmat (LimitOverrides::coopmat)
    bool coopmat_emulated = false;  // coopmat_shapes is LimitOverrides::coopmat_emulated's (tests)
    bool timestamps = false;
    std::uint32_t max_loop_iterations = 0;  // per invocation, from driver quirks; 0: unlimited
    // Pipelines keep the kernels' unroll hints; off by a quirk or no_unroll (pipeline.cpp).
    bool loop_unrolling = true;
    bool forced = false;  // some override lowered a limit
};

ComputeLimits effective_limits(const DeviceInfo& info, const DriverQuirks& quirks, const LimitOverrides& overrides);

// When `what` (an op or a pipeline) needs more storage buffers per shader stage than `limits`
// allow: the message saying so, naming both counts; nullopt when they suffice.
std::optional<std::string> storage_buffers_shortfall(const ComputeLimits& limits, std::uint32_t needed,
                                                     std::string_view what);
// Throws vkf::Error with that message.
void check_storage_buffers(const ComputeLimits& limits, std::uint32_t needed, std::string_view what);

}  // namespace vkf
