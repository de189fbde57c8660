// Planning of the attention kernels: tile tables, split-KV and loop-limit arithmetic
// (host/ops/attention.hpp). The op itself is in attention.cpp.
#include "host/ops/attention.hpp"
#include "host/ops/attention_detail.hpp"

#include "base/error.hpp"
#include "host/util/math.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>

namespace vkf {

namespace {

using attention_detail::attention_partials_bytes;
using attention_detail::attention_tables_bytes;
using attention_detail::bytes_text;

struct TileCandidate {
    std::uint32_t rows, keys, threads_per_row;
};

// Largest first; the first that fits the device's limits (and the shape) is taken.
constexpr std::array<TileCandidate, 15> kTileCandidates{{
    {32, 32, 8},
    {16, 64, 8},
    {16, 32, 8},
    {16, 16, 8},
    {8, 32, 8},
    {8, 16, 8},
    {4, 16, 8},
    {4, 8, 4},
    {2, 8, 4},
    // Decoding: one query row, many lanes on it.
    {1, 64, 32},
    {1, 64, 16},
    {1, 32, 8},
    {1, 16, 4},
    {1, 8, 2},
    // Head sizes near 256 under a small shared memory (below Vulkan's minimum of 16 KiB,
    // VKF_LIMITS).
    {1, 4, 2},
}};

// The head size as attention.comp stores a row in shared memory: whole vec4 quads, the last
// one zero-padded when d % 4 == 2.
std::uint32_t padded_head_dim(std::uint32_t d) {
    return static_cast<std::uint32_t>(round_up(d, 4));
}

// Whether the tile may serve head size d. The table was tuned on multiples of 16, whose pairs
// split evenly over every row of 2..8 lanes; they keep the tiles whose lanes get the same
// number of output pairs. Other sizes (40, 72, 250, ...) have no such tile of 8 lanes, and
// take the first tile that fits, their lanes guarding a last pair past the row
// (attention.comp's PAIRS_SPLIT_EVENLY): a lane or two idle in P*V costs less than the small
// tiles an even split would force.
bool tile_serves_head_dim(const TileCandidate& t, std::uint32_t d) {
    return d % 16 != 0 || (d / 2) % t.threads_per_row == 0;
}

std::uint32_t tile_shared_bytes(const TileCandidate& t, std::uint32_t d) {
    // q_tile, kv_tile (rows padded by one vec4), p_tile (rows of keys floats padded to an odd
    // multiple of threads_per_row against bank conflicts) and lane_stats of
    // shaders/attention.comp.
    const std::uint32_t dq = padded_head_dim(d);
    const std::uint32_t kv_stride = dq + 4 * (1 - (dq / 4) % 2);  // an odd number of vec4s
    const std::uint32_t p_stride = t.keys + t.threads_per_row * (1 - (t.keys / t.threads_per_row) % 2);
    return 4 * (t.rows * dq + t.keys * kv_stride + t.rows * p_stride + t.rows * t.threads_per_row);
}

// Loop iterations one invocation of attention.comp runs per KV tile, counted without any
// unrolling by the driver (an upper bound): K and V loads, scores, tile max, P*V, rescale.
std::uint32_t loop_iterations_per_tile(const TileCandidate& t, std::uint32_t d) {
    const std::uint32_t dq = padded_head_dim(d);
    const std::uint32_t wg = t.rows * t.threads_per_row;
    const auto pairs = static_cast<std::uint32_t>(ceil_div(d / 2, t.threads_per_row));
    const auto loads = static_cast<std::uint32_t>(2 * ceil_div(t.keys * (dq / 2), wg));
    const std::uint32_t keys_per_lane = t.keys / t.threads_per_row;
    const std::uint32_t scores = keys_per_lane * (dq / 4 + 1);
    // P*V walks the tile's keys as keys_per_lane x threads_per_row (the lane holding each
    // probability), hence keys_per_lane outer iterations besides the keys.
    return loads + scores + t.threads_per_row + 3 * keys_per_lane + t.keys * (pairs + 1) + pairs + 8;
}

// Workgroups that keep a GPU busy; fewer than this on a long KV means splitting. Where the
// device reports its compute units (ComputeLimits::compute_units: NVIDIA SMs, AMD CUs, Arm
// shader cores), kWorkgroupsPerComputeUnit per unit: a unit holds several of these small
// workgroups at once, and more waves leave less of the last one idle, while every split adds
// a partial row to write and combine. Elsewhere kDefaultTargetWorkgroups, enough for a large
// desktop GPU (64 units x 4).
constexpr std::uint32_t kWorkgroupsPerComputeUnit = 4;
constexpr std::uint32_t kDefaultTargetWorkgroups = 256;
constexpr std::uint32_t kMinSplitKeys = 256;
constexpr std::uint32_t kMaxSplits = 64;

std::uint64_t gpu_target_workgroups(const ComputeLimits& limits) {
    return limits.compute_units > 0 ? std::uint64_t{limits.compute_units} * kWorkgroupsPerComputeUnit
                                    : kDefaultTargetWorkgroups;
}

// KV splits for parallelism: enough workgroups to keep the device busy when the query rows
// alone give fewer than `target`, never slices under kMinSplitKeys; `force_splits` wins.
std::uint64_t parallel_splits(std::uint64_t groups, std::uint32_t kv_len, std::uint64_t target,
                              const AttentionOptions& options) {
    if (options.force_splits > 0) {
        return options.force_splits;
    }
    if (groups < target && kv_len >= 2 * kMinSplitKeys) {
        return std::min<std::uint64_t>({ceil_div(target, groups), kv_len / kMinSplitKeys, kMaxSplits});
    }
    return 1;
}

// `splits`, raised to `needed` where the driver's loop limit needs that many; throws when
// their partial results (record_bytes each) could not be bound in one range.
std::uint64_t splits_for_loop_limit(const AttentionShape& shape, const ComputeLimits& limits,
                                    std::uint64_t record_bytes, std::uint64_t splits, std::uint64_t needed) {
    if (needed <= splits) {
        return splits;
    }
    if (record_bytes * needed > limits.storage_buffer_range) {
        throw Error("attention over " + fmt::to_string(shape.kv_len) + " keys needs " + fmt::to_string(needed) +
                    " KV splits on this driver (its shaders may run at most " +
                    fmt::to_string(limits.max_loop_iterations) +
                    " loop iterations), and their partial results would exceed maxStorageBufferRange; "
                    "use fewer query rows per call");
    }
    return needed;
}

// Rows kernel (shaders/attention_rows.comp).
// On llvmpipe (Mesa 22.3, 2 cores) every storage-buffer load costs a loop over the SIMD
// lanes, so loads per multiply-add decide everything. Causal prefill 512, 16 heads: with
// subgroup loads, 4 rows per invocation ran 1.2x faster than 2 and 2x faster than 1;
// without them 8 rows ran 4x faster than 1; subgroup loads won 3.5x over the best of those.
// 4 keys per softmax update beat 1, 2 and 8. Larger blocks also take llvmpipe long to compile
// (4 rows of head_dim 128: ~13 s), hence 2 rows at head_dim 256.
constexpr std::uint32_t kRowsMaxWorkgroup = 32;
constexpr std::uint32_t kRowsKeysPerBlock = 4;
constexpr std::uint32_t kRowsPerInvocation = 4;
constexpr std::uint32_t kRowsPerInvocationLargeHead = 2;  // head_dim > 128
// Decoding (a few query rows): the SIMD lanes of a row take consecutive KV splits, so that
// every lane loads keys of its own instead of idling; 2-2.8x the naive kernel at kv 4096,
// 1.2-2x one lane per row.
constexpr std::uint32_t kRowsDecodeMaxRows = 4;
constexpr std::uint32_t kRowsSplitLanes = 8;
constexpr std::uint32_t kRowsSplitLanesMinKeys = 512;
// Subgroup sizes the tiled kernel's SUBGROUP_REDUCE serves (every size Vulkan devices report).
constexpr std::uint32_t kMinSubgroupReduce = 4;
constexpr std::uint32_t kMaxSubgroupReduce = 128;
// A CPU has few cores: split the KV only when the rows give fewer workgroups than this.
constexpr std::uint32_t kTargetWorkgroupsCpu = 16;

AttentionPlan plan_tiled(const ComputeLimits& limits, const AttentionShape& shape, AttentionOptions options);

// Loop iterations one invocation of attention_rows.comp runs: per block of keys (the key
// loop's body) and outside the key loop. The kernel's other loops have constant counts and
// [[unroll]] hints: where the driver unrolls them only the key loop is left. Without unrolling
// (ComputeLimits::loop_unrolling false, the hints dropped) every iteration of every nested
// loop counts, as the key loop's body nests them (an upper bound).
struct RowsLoopCount {
    std::uint64_t per_block, fixed;
};
RowsLoopCount rows_loop_count(bool unrolled, std::uint32_t bk, std::uint32_t r, std::uint32_t d,
                              std::uint32_t subgroup_loads) {
    if (unrolled) {
        return {1, 8};
    }
    const std::uint64_t dq = ceil_div(d, 4);
    const std::uint64_t qpl = ceil_div(dq, std::max<std::uint32_t>(subgroup_loads, 1));
    // Scores (bk x r), the key loads (bk x qpl, twice: K and V), q.k (dq x bk x r), the
    // softmax update (r x 2 bk), P*V (dq x (bk + r x bk)), each with its outer loop's own count.
    const std::uint64_t per_block = 1 + (bk + bk * r) + 2 * (bk + bk * qpl) + (dq + dq * bk + dq * bk * r) +
                                    (r + 2 * r * bk) + (dq + dq * bk + dq * r + dq * r * bk);
    // Loading the query rows and zeroing the accumulators before, writing the rows after.
    const std::uint64_t fixed = 16 + 4 * (r + r * dq);
    return {per_block, fixed};
}

AttentionPlan plan_rows(const ComputeLimits& limits, const AttentionShape& shape, AttentionOptions options) {
    const std::uint32_t max_wg =
        std::bit_floor(std::min({kRowsMaxWorkgroup, limits.workgroup_invocations, limits.workgroup_size[0]}));
    const std::uint32_t bk = kRowsKeysPerBlock;
    const std::uint32_t sg = limits.subgroup_size;
    const std::uint64_t record_bytes =
        std::uint64_t{4} * (shape.head_dim + 2) * shape.q_len * shape.n_head * shape.batch;
    const bool decode = shape.q_len <= kRowsDecodeMaxRows;
    std::uint32_t lanes = 1;
    if (decode && shape.kv_len >= kRowsSplitLanesMinKeys && options.force_splits != 1 &&
        record_bytes * kRowsSplitLanes <= limits.storage_buffer_range) {
        lanes = std::min(kRowsSplitLanes, max_wg);
    }
    const std::uint32_t r = decode ? 1 : (shape.head_dim > 128 ? kRowsPerInvocationLargeHead : kRowsPerInvocation);
    std::uint32_t inv = std::min(std::bit_ceil(static_cast<std::uint32_t>(ceil_div(shape.q_len, r))), max_wg / lanes);
    std::uint32_t subgroup_loads = 0;
    // Shuffles assume full subgroups of sg lanes: only where the pipeline can require them.
    if (!decode && limits.subgroup_ops && limits.subgroup_size_control && sg > 1 && std::has_single_bit(sg) &&
        sg <= max_wg) {
        inv = std::max(inv, sg);  // whole subgroups
        subgroup_loads = sg;
    }
    const std::uint32_t rows = inv * r;
    AttentionPlan plan{.kernel = AttentionKernel::Rows,
                       .rows_per_group = rows,
                       .keys_per_tile = bk,
                       .threads_per_row = lanes,
                       .workgroup_size = inv * lanes,
                       .rows_per_invocation = r,
                       .subgroup_loads = subgroup_loads,
                       .shared_bytes = 0,
                       .n_splits = 1,
                       .kv_split_len = shape.kv_len};
    const std::uint64_t groups = std::uint64_t{ceil_div(shape.q_len, rows)} * shape.n_head * shape.batch;
    std::uint64_t splits =
        std::max<std::uint64_t>(parallel_splits(groups, shape.kv_len, kTargetWorkgroupsCpu, options), lanes);
    while (splits > lanes && record_bytes * splits > limits.storage_buffer_range) {
        splits /= 2;
    }
    // Enough splits that no invocation gets near the driver's loop limit.
    const RowsLoopCount count = rows_loop_count(limits.loop_unrolling, bk, r, shape.head_dim, plan.subgroup_loads);
    auto iterations = [&](std::uint64_t keys) { return ceil_div(keys, bk) * count.per_block + count.fixed; };
    if (limits.max_loop_iterations != 0) {
        const std::uint64_t budget = limits.max_loop_iterations / 2;
        const std::uint64_t blocks = std::max<std::uint64_t>(1, (budget - count.fixed) / count.per_block);
        splits = splits_for_loop_limit(shape, limits, record_bytes, splits, ceil_div(shape.kv_len, blocks * bk));
    }
    if (splits > 1) {
        // A multiple of the lanes per row; trailing splits may be empty (they write empty records).
        const std::uint64_t total = ceil_div(splits, lanes) * lanes;
        plan.kv_split_len = static_cast<std::uint32_t>(round_up(ceil_div(shape.kv_len, total), bk));
        plan.n_splits = static_cast<std::uint32_t>(lanes > 1 ? total : ceil_div(shape.kv_len, plan.kv_split_len));
    }
    if (plan.n_splits <= 1) {
        plan.n_splits = 1;
        plan.kv_split_len = shape.kv_len;
    }
    plan.loop_iterations = iterations(plan.kv_split_len);
    return plan;
}

}  // namespace

void check_head_dim(std::uint32_t head_dim) {
    if (head_dim == 0 || head_dim % 2 != 0 || head_dim > kMaxHeadDim) {
        throw Error("head_dim " + fmt::to_string(head_dim) +
                    " is not supported by the GPU attention kernels; supported: even head sizes 2.." +
                    fmt::to_string(kMaxHeadDim));
    }
}

const char* to_string(AttentionKernel kernel) {
    switch (kernel) {
        case AttentionKernel::Tiled:
            return "tiled";
        case AttentionKernel::Rows:
            return "rows";
        default:
            return "auto";
    }
}

AttentionDevice attention_device(const Context& ctx) {
    // VKF_LIMITS=gpu_attention: plans as on a GPU (tests run a GPU's kernels on lavapipe).
    return AttentionDevice{.limits = ctx.limits(),
                           .cpu = ctx.device_info().type == DeviceType::Cpu && !ctx.overrides().gpu_attention};
}

std::string AttentionPlan::describe() const {
    std::string s;
    if (kernel == AttentionKernel::Rows) {
        s = "rows kernel, " + fmt::to_string(workgroup_size) + " invocations of " +
            fmt::to_string(rows_per_invocation) + " rows x " + fmt::to_string(keys_per_tile) + " keys, " +
            fmt::to_string(threads_per_row) + " splits per row in a workgroup, " +
            (subgroup_loads > 0 ? "K/V shared by subgroup shuffles" : "direct K/V loads") + ", no shared memory";
    } else {
        s = "tiled kernel, tiles " + fmt::to_string(rows_per_group) + "x" + fmt::to_string(keys_per_tile) + ", " +
            fmt::to_string(workgroup_size) + " invocations (" + fmt::to_string(threads_per_row) + " per row), " +
            fmt::to_string(shared_bytes) + " B shared, " +
            (subgroup_reduce > 0 ? "row reductions by subgroup shuffles (" + fmt::to_string(subgroup_reduce) + ")"
             : subgroup_any_size ? "row reductions by subgroup shuffles where the kernel finds its subgroups fit, "
                                   "else in shared memory"
                                 : "row reductions in shared memory") +
            (fp16_arithmetic ? ", fp16 arithmetic" : "");
    }
    if (n_splits > 1) {
        s += ", split-KV " + fmt::to_string(n_splits) + " x " + fmt::to_string(kv_split_len) + " keys";
    }
    return s;
}

AttentionPlan plan_attention(const ComputeLimits& limits, const AttentionShape& shape, AttentionOptions options,
                             std::uint32_t window) {
    return plan_attention(AttentionDevice{.limits = limits, .cpu = false}, shape, options, window);
}

AttentionPlan plan_attention(const AttentionDevice& device, const AttentionShape& full_shape, AttentionOptions options,
                             std::uint32_t window) {
    check_head_dim(full_shape.head_dim);
    if (options.paged) {
        check_paged(full_shape, *options.paged);
    }
    // With a window, a workgroup of rows visits at most window + q_len keys (the kernels start
    // at its first row's window): splits, loop limits and tiles are planned for that many.
    AttentionShape shape = full_shape;
    if (window != 0) {
        shape.kv_len =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(shape.kv_len, std::uint64_t{window} + shape.q_len));
    }
    const ComputeLimits& limits = device.limits;
    // The kernels bind Q, K, V, O (or the partials), slopes and key counts; their PACKED_TABLES
    // variants 4 (the tables at the end of the partials buffer). Nothing binds fewer.
    check_storage_buffers(limits, kPackedAttentionBindings, "attention");
    AttentionPlan plan =
        options.kernel == AttentionKernel::Rows || (options.kernel == AttentionKernel::Auto && device.cpu)
            ? plan_rows(limits, shape, options)
            : plan_tiled(limits, shape, options);
    if (limits.storage_buffers < kAttentionBindings) {
        plan.packed_tables = true;
        const std::uint64_t bytes =
            attention_partials_bytes(shape, plan.n_splits) + attention_tables_bytes(shape, options);
        if (bytes > limits.storage_buffer_range) {
            throw Error("attention: with " + fmt::to_string(limits.storage_buffers) +
                        " storage buffers per shader stage (fewer than the " + fmt::to_string(kAttentionBindings) +
                        " of the fused kernels) the output rows pass through a partials buffer of " +
                        bytes_text(bytes) + ", over maxStorageBufferRange (" + bytes_text(limits.storage_buffer_range) +
                        "); use fewer query rows per call");
        }
    }
    return plan;
}

namespace {

// The subgroup size the tiled kernel's SUBGROUP_REDUCE variant may use, 0: none. Its
// butterflies need each row's lanes in one subgroup, TPR-aligned (TPR divides the size), and
// full subgroups of a known size (the pipeline requires the device's, which must divide the
// workgroup); without size control a driver may run partial subgroups (docs/DESIGN.md,
// portability rules), so the shared-memory variant runs there.
bool subgroup_size_serves(std::uint32_t sg, std::uint32_t tpr, std::uint32_t workgroup) {
    return std::has_single_bit(sg) && sg >= kMinSubgroupReduce && sg <= kMaxSubgroupReduce && sg % tpr == 0 &&
           workgroup % sg == 0;
}
std::uint32_t tiled_subgroup_reduce(const ComputeLimits& limits, std::uint32_t tpr, std::uint32_t workgroup) {
    const std::uint32_t sg = limits.subgroup_size;
    const bool usable = limits.subgroup_ops && limits.subgroup_size_control && subgroup_size_serves(sg, tpr, workgroup);
    return usable ? sg : 0;
}

// Without size control: the SUBGROUP_ANY_SIZE variant, which checks its subgroups itself
// (attention_reduce.glsl), where the reported size would pass the check. Our SPIR-V (1.3),
// created without a required size or ALLOW_VARYING_SUBGROUP_SIZE, sees gl_SubgroupSize equal
// to that size (Vulkan's SubgroupSize rule), so where it does not serve the kernel could only
// fall back. The check's flag takes 4 bytes of shared memory more.
void plan_subgroup_any_size(AttentionPlan& plan, const ComputeLimits& limits, const AttentionOptions& options) {
    const bool wanted = options.force_subgroup_any_size ||
                        (plan.subgroup_reduce == 0 && !limits.subgroup_size_control &&
                         subgroup_size_serves(limits.subgroup_size, plan.threads_per_row, plan.workgroup_size));
    if (limits.subgroup_ops && wanted && plan.shared_bytes + 4 <= limits.shared_memory) {
        plan.subgroup_reduce = 0;
        plan.subgroup_any_size = true;
        plan.shared_bytes += 4;
    }
}

AttentionPlan plan_tiled(const ComputeLimits& limits, const AttentionShape& shape, AttentionOptions options) {
    const std::uint32_t d = shape.head_dim;
    // Short query blocks (decoding) take short tiles rather than idle rows.
    std::uint32_t wanted_rows = 1;
    while (wanted_rows < shape.q_len && wanted_rows < 32) {
        wanted_rows *= 2;
    }
    const TileCandidate* chosen = nullptr;
    for (int pass = 0; pass < 2 && chosen == nullptr; ++pass) {
        for (const TileCandidate& t : kTileCandidates) {
            const std::uint32_t wg = t.rows * t.threads_per_row;
            const bool fits = wg <= limits.workgroup_invocations && wg <= limits.workgroup_size[0] &&
                              tile_shared_bytes(t, d) <= limits.shared_memory && tile_serves_head_dim(t, d) &&
                              t.keys % t.threads_per_row == 0;
            if (fits && (pass == 1 || t.rows <= wanted_rows)) {
                chosen = &t;
                break;
            }
        }
    }
    if (chosen == nullptr) {
        throw Error("no attention tile configuration for head_dim " + fmt::to_string(d) +
                    " fits the device: " + fmt::to_string(limits.shared_memory) + " bytes of shared memory, " +
                    fmt::to_string(limits.workgroup_invocations) + " invocations per workgroup");
    }
    AttentionPlan plan{.rows_per_group = chosen->rows,
                       .keys_per_tile = chosen->keys,
                       .threads_per_row = chosen->threads_per_row,
                       .workgroup_size = chosen->rows * chosen->threads_per_row,
                       .shared_bytes = tile_shared_bytes(*chosen, d),
                       .n_splits = 1,
                       .kv_split_len = shape.kv_len};
    plan.subgroup_reduce = tiled_subgroup_reduce(limits, plan.threads_per_row, plan.workgroup_size);
    plan_subgroup_any_size(plan, limits, options);

    const std::uint64_t groups = std::uint64_t{ceil_div(shape.q_len, plan.rows_per_group)} * shape.n_head * shape.batch;
    std::uint64_t splits = parallel_splits(groups, shape.kv_len, gpu_target_workgroups(limits), options);
    // The partials buffer must be bindable in one range.
    const std::uint64_t record_bytes = std::uint64_t{4} * (d + 2) * shape.q_len * shape.n_head * shape.batch;
    while (splits > 1 && record_bytes * splits > limits.storage_buffer_range) {
        splits /= 2;
    }
    // Drivers with a per-invocation loop limit (llvmpipe) get enough splits to stay well
    // inside it; the split-KV path is exact, only slower.
    if (limits.max_loop_iterations != 0) {
        const std::uint32_t budget = limits.max_loop_iterations / 2;
        const std::uint32_t max_tiles = std::max<std::uint32_t>(1, budget / loop_iterations_per_tile(*chosen, d));
        splits = splits_for_loop_limit(shape, limits, record_bytes, splits,
                                       ceil_div(shape.kv_len, std::uint64_t{max_tiles} * plan.keys_per_tile));
    }
    if (splits > 1) {
        plan.kv_split_len = static_cast<std::uint32_t>(round_up(ceil_div(shape.kv_len, splits), plan.keys_per_tile));
        plan.n_splits = static_cast<std::uint32_t>(ceil_div(shape.kv_len, plan.kv_split_len));
    }
    if (plan.n_splits <= 1) {
        plan.n_splits = 1;
        plan.kv_split_len = shape.kv_len;
    }
    return plan;
}

}  // namespace

namespace attention_detail {

std::string bytes_text(std::uint64_t n) {
    return fmt::to_string(n) + " bytes";
}

std::uint64_t attention_tables_bytes(const AttentionShape& shape, const AttentionOptions& options) {
    const std::uint64_t words =
        options.paged ? VKF_ATTN_SEQ_WORDS(std::uint64_t{shape.batch}, options.paged->blocks_per_seq) : shape.batch;
    return std::uint64_t{4} * (shape.n_head + words);
}

std::uint64_t attention_partials_bytes(const AttentionShape& shape, std::uint32_t n_splits) {
    return std::uint64_t{4} * (shape.head_dim + 2) * shape.q_len * shape.n_head * shape.batch * n_splits;
}

}  // namespace attention_detail

}  // namespace vkf
