#include "runtime/limits.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>

namespace vkf {

namespace {

std::uint64_t parse_size(std::string_view key, std::string_view text) {
    const std::optional<std::uint64_t> bytes = parse_byte_size(text);
    if (!bytes) {
        throw Error("limit override '" + std::string(key) + "': '" + std::string(text) + "' is not a positive integer");
    }
    return *bytes;
}

std::uint32_t parse_u32(std::string_view key, std::string_view text) {
    const std::uint64_t v = parse_size(key, text);
    if (v > UINT32_MAX) {
        throw Error("limit override '" + std::string(key) + "' is too large");
    }
    return static_cast<std::uint32_t>(v);
}

// "XxYxZ" or "N" (all three).
std::array<std::uint32_t, 3> parse_workgroup_size(std::string_view text, std::string_view key = "workgroup_size") {
    std::array<std::uint32_t, 3> out{};
    const std::size_t x1 = text.find('x');
    if (x1 == std::string_view::npos) {
        out.fill(parse_u32(key, text));
        return out;
    }
    const std::size_t x2 = text.find('x', x1 + 1);
    if (x2 == std::string_view::npos) {
        throw Error("limit override '" + std::string(key) + "': '" + std::string(text) + "' is not XxYxZ or N");
    }
    out[0] = parse_u32(key, text.substr(0, x1));
    out[1] = parse_u32(key, text.substr(x1 + 1, x2 - x1 - 1));
    out[2] = parse_u32(key, text.substr(x2 + 1));
    return out;
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
    std::uint64_t multiplier = 1;
    if (!text.empty()) {
        switch (text.back()) {
            case 'K':
            case 'k':
                multiplier = 1ull << 10;
                break;
            case 'M':
            case 'm':
                multiplier = 1ull << 20;
                break;
            case 'G':
            case 'g':
                multiplier = 1ull << 30;
                break;
            default:
                break;
        }
        if (multiplier != 1) {
            text.remove_suffix(1);
        }
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
        value > UINT64_MAX / multiplier) {
        return std::nullopt;
    }
    return value * multiplier;
}

LimitOverrides LimitOverrides::phone() {
    // What a mid-range Mali/Adreno/PowerVR phone offers (the lower of the common values).
    // Storage buffers: WebGPU's default maxStorageBuffersPerShaderStage, a value meant to
    // hold on the devices it targets, phones included (Vulkan itself guarantees only 4).
    return LimitOverrides{.shared_memory = 16384,
                          .workgroup_invocations = 256,
                          .workgroup_count = 65535,
                          .storage_buffer_range = 128ull << 20,
                          .push_constants = 128,
                          .storage_buffers = 8};
}

LimitOverrides LimitOverrides::spec_minimum() {
    // The minimums every Vulkan device reports (the specification's "Required Limits" table,
    // chapter Limits; https://docs.vulkan.org/refpages/latest/refpages/source/Required_Limits.html):
    // maxComputeSharedMemorySize 16384,
    // maxComputeWorkGroupInvocations 128, maxComputeWorkGroupSize (128, 128, 64),
    // maxComputeWorkGroupCount (65535, 65535, 65535), maxPushConstantsSize 128,
    // maxStorageBufferRange 2^27, maxPerStageDescriptorStorageBuffers 4 (and
    // maxDescriptorSetStorageBuffers 24, which the 4 already bound).
    // Features the specification leaves optional are off: storageBuffer16BitAccess,
    // shaderFloat16, shaderInt64, shaderIntegerDotProduct (and shaderInt8), subgroup size
    // control. Subgroups: a Vulkan 1.1 device must support VK_SUBGROUP_FEATURE_BASIC_BIT in
    // compute shaders and nothing more; ComputeLimits::subgroup_ops means basic + arithmetic +
    // shuffle, and no vkformer kernel uses basic operations alone (the ROWDOT matmuls use
    // subgroupAdd, attention_rows' SUBGROUP_LOADS subgroupShuffle), so no_subgroup_ops is
    // exactly "basic only" for the kernels we have. Device memory is left as it is.
    LimitOverrides o{.shared_memory = 16384,
                     .workgroup_invocations = 128,
                     .workgroup_count = 65535,
                     .workgroup_size = std::array<std::uint32_t, 3>{128, 128, 64},
                     .storage_buffer_range = 1ull << 27,
                     .push_constants = 128,
                     .storage_buffers = 4};
    o.no_fp16_storage = true;
    o.no_fp16_arithmetic = true;
    o.no_subgroup_ops = true;
    o.no_subgroup_size_control = true;
    o.no_int64 = true;
    o.no_integer_dot = true;
    return o;
}

LimitOverrides LimitOverrides::parse(std::string_view spec) {
    LimitOverrides out;
    while (!spec.empty()) {
        const std::size_t comma = spec.find(',');
        std::string_view item = spec.substr(0, comma);
        spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
        if (item.empty()) {
            continue;
        }
        const std::size_t eq = item.find('=');
        const std::string_view key = item.substr(0, eq);
        const std::string_view value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
        const bool has_value = eq != std::string_view::npos;
        auto need_value = [&] {
            if (!has_value) {
                throw Error("limit override '" + std::string(key) + "' needs a value (" + std::string(key) + "=N)");
            }
        };
        if (key == "phone" && !has_value) {
            out = out.merged_with(phone());
        } else if (key == "spec_minimum" && !has_value) {
            out = out.merged_with(spec_minimum());
        } else if (key == "shared_memory") {
            need_value();
            out.shared_memory = parse_u32(key, value);
        } else if (key == "workgroup_invocations") {
            need_value();
            out.workgroup_invocations = parse_u32(key, value);
        } else if (key == "workgroup_size") {
            need_value();
            out.workgroup_size = parse_workgroup_size(value);
        } else if (key == "workgroup_count") {
            need_value();
            out.workgroup_count = parse_u32(key, value);
        } else if (key == "storage_buffer_range") {
            need_value();
            out.storage_buffer_range = parse_size(key, value);
        } else if (key == "push_constants") {
            need_value();
            out.push_constants = parse_u32(key, value);
        } else if (key == "storage_buffers") {
            need_value();
            out.storage_buffers = parse_u32(key, value);
        } else if (key == "compute_units") {
            need_value();
            out.compute_units = parse_u32(key, value);
        } else if (key == "no_fp16_storage" && !has_value) {
            out.no_fp16_storage = true;
        } else if (key == "no_fp16_arithmetic" && !has_value) {
            out.no_fp16_arithmetic = true;
        } else if (key == "no_subgroup_ops" && !has_value) {
            out.no_subgroup_ops = true;
        } else if (key == "no_subgroup_size_control" && !has_value) {
            out.no_subgroup_size_control = true;
        } else if (key == "no_int64" && !has_value) {
            out.no_int64 = true;
        } else if (key == "no_integer_dot" && !has_value) {
            out.no_integer_dot = true;
        } else if (key == "no_unroll" && !has_value) {
            out.no_unroll = true;
        } else if (key == "gpu_attention" && !has_value) {
            out.gpu_attention = true;
        } else if (key == "gpu_matmul" && !has_value) {
            out.gpu_matmul = true;
        } else if (key == "coopmat" && !has_value) {
            out.coopmat = true;
        } else if (key == "coopmat_emulated") {
            need_value();
            out.coopmat_emulated = parse_workgroup_size(value, key);
        } else if (key == "device_heap" || key == "host_heap") {
            need_value();
            (key == "device_heap" ? out.device_heap : out.host_heap) = parse_size(key, value);
        } else {
            throw Error("unknown limit override '" + std::string(item) +
                        "'; known: phone, spec_minimum, shared_memory=N, workgroup_invocations=N, "
                        "workgroup_size=XxYxZ, workgroup_count=N, "
                        "storage_buffer_range=N, push_constants=N, storage_buffers=N, compute_units=N, "
                        "no_fp16_storage, no_fp16_arithmetic, no_subgroup_ops, no_subgroup_size_control, "
                        "no_int64, no_integer_dot, no_unroll, gpu_attention, gpu_matmul, device_heap=N, host_heap=N, "
                        "coopmat, coopmat_emulated=MxNxK");
        }
    }
    return out;
}

bool LimitOverrides::empty() const {
    return !shared_memory && !workgroup_invocations && !workgroup_size && !workgroup_count && !storage_buffer_range &&
           !push_constants && !storage_buffers && !compute_units && !no_fp16_storage && !no_fp16_arithmetic &&
           !no_subgroup_ops && !no_subgroup_size_control && !no_int64 && !no_integer_dot && !no_unroll &&
           !gpu_attention && !gpu_matmul && !coopmat && !coopmat_emulated && !device_heap && !host_heap;
}

std::string LimitOverrides::describe() const {
    std::string out;
    auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ",") + s; };
    if (shared_memory)
        add("shared_memory=" + fmt::to_string(*shared_memory));
    if (workgroup_invocations)
        add("workgroup_invocations=" + fmt::to_string(*workgroup_invocations));
    if (workgroup_size)
        add("workgroup_size=" + fmt::to_string((*workgroup_size)[0]) + "x" + fmt::to_string((*workgroup_size)[1]) +
            "x" + fmt::to_string((*workgroup_size)[2]));
    if (workgroup_count)
        add("workgroup_count=" + fmt::to_string(*workgroup_count));
    if (storage_buffer_range)
        add("storage_buffer_range=" + fmt::to_string(*storage_buffer_range));
    if (push_constants)
        add("push_constants=" + fmt::to_string(*push_constants));
    if (storage_buffers)
        add("storage_buffers=" + fmt::to_string(*storage_buffers));
    if (compute_units)
        add("compute_units=" + fmt::to_string(*compute_units));
    if (no_fp16_storage)
        add("no_fp16_storage");
    if (no_fp16_arithmetic)
        add("no_fp16_arithmetic");
    if (no_subgroup_ops)
        add("no_subgroup_ops");
    if (no_subgroup_size_control)
        add("no_subgroup_size_control");
    if (no_int64)
        add("no_int64");
    if (no_integer_dot)
        add("no_integer_dot");
    if (no_unroll)
        add("no_unroll");
    if (gpu_attention)
        add("gpu_attention");
    if (gpu_matmul)
        add("gpu_matmul");
    if (coopmat)
        add("coopmat");
    if (coopmat_emulated)
        add("coopmat_emulated=" + fmt::to_string((*coopmat_emulated)[0]) + "x" +
            fmt::to_string((*coopmat_emulated)[1]) + "x" + fmt::to_string((*coopmat_emulated)[2]));
    if (device_heap)
        add("device_heap=" + fmt::to_string(*device_heap));
    if (host_heap)
        add("host_heap=" + fmt::to_string(*host_heap));
    return out.empty() ? "none" : out;
}

LimitOverrides LimitOverrides::merged_with(const LimitOverrides& o) const {
    LimitOverrides r = *this;
    if (o.shared_memory)
        r.shared_memory = o.shared_memory;
    if (o.workgroup_invocations)
        r.workgroup_invocations = o.workgroup_invocations;
    if (o.workgroup_size)
        r.workgroup_size = o.workgroup_size;
    if (o.workgroup_count)
        r.workgroup_count = o.workgroup_count;
    if (o.storage_buffer_range)
        r.storage_buffer_range = o.storage_buffer_range;
    if (o.push_constants)
        r.push_constants = o.push_constants;
    if (o.storage_buffers)
        r.storage_buffers = o.storage_buffers;
    if (o.compute_units)
        r.compute_units = o.compute_units;
    r.no_fp16_storage |= o.no_fp16_storage;
    r.no_fp16_arithmetic |= o.no_fp16_arithmetic;
    r.no_subgroup_ops |= o.no_subgroup_ops;
    r.no_subgroup_size_control |= o.no_subgroup_size_control;
    r.no_int64 |= o.no_int64;
    r.no_integer_dot |= o.no_integer_dot;
    r.no_unroll |= o.no_unroll;
    r.gpu_attention |= o.gpu_attention;
    r.gpu_matmul |= o.gpu_matmul;
    r.coopmat |= o.coopmat;
    if (o.coopmat_emulated)
        r.coopmat_emulated = o.coopmat_emulated;
    if (o.device_heap)
        r.device_heap = o.device_heap;
    if (o.host_heap)
        r.host_heap = o.host_heap;
    return r;
}

ComputeLimits effective_limits(const DeviceInfo& info, const DriverQuirks& quirks, const LimitOverrides& o) {
    ComputeLimits l;
    bool forced = false;
    auto lower = [&forced](auto device_value, auto override_value) {
        using T = decltype(device_value);
        if (override_value && static_cast<T>(*override_value) < device_value) {
            forced = true;
            return static_cast<T>(*override_value);
        }
        return device_value;
    };
    l.shared_memory = lower(info.max_shared_memory, o.shared_memory);
    l.workgroup_invocations = lower(info.max_workgroup_invocations, o.workgroup_invocations);
    for (int d = 0; d < 3; ++d) {
        const std::optional<std::uint32_t> size =
            o.workgroup_size ? std::optional<std::uint32_t>((*o.workgroup_size)[d]) : std::nullopt;
        l.workgroup_size[d] = std::min(lower(info.max_workgroup_size[d], size), l.workgroup_invocations);
        l.workgroup_count[d] = lower(info.max_workgroup_count[d], o.workgroup_count);
    }
    l.push_constants = lower(info.max_push_constants, o.push_constants);
    l.storage_buffer_range = lower(info.max_storage_buffer_range, o.storage_buffer_range);
    l.storage_offset_alignment = std::max<std::uint64_t>(info.min_storage_buffer_offset_alignment, 4);
    l.storage_buffers =
        lower(std::min(info.max_per_stage_storage_buffers, info.max_descriptor_set_storage_buffers), o.storage_buffers);
    l.subgroup_size = info.subgroup_size;
    l.fp16_storage = info.storage_16bit && !o.no_fp16_storage;
    l.fp16_arithmetic = info.float16_arithmetic && !o.no_fp16_arithmetic && !quirks.avoid_fp16_arithmetic;
    l.subgroup_ops = info.subgroup_ops.basic && info.subgroup_ops.arithmetic && info.subgroup_ops.shuffle &&
                     !o.no_subgroup_ops && !quirks.avoid_subgroup_ops;
    // The kernels require the device's default subgroup size, which must be one it can require.
    const bool size_control = info.subgroup_size_control && info.compute_full_subgroups &&
                              std::has_single_bit(info.subgroup_size) && info.subgroup_size >= info.min_subgroup_size &&
                              info.subgroup_size <= info.max_subgroup_size;
    l.subgroup_size_control = size_control && !o.no_subgroup_size_control;
    l.int64 = info.int64 && !o.no_int64;
    l.integer_dot_product = info.integer_dot_product && !o.no_integer_dot;
    if (info.cooperative_matrix && l.fp16_arithmetic) {
        for (const CoopMatShape& s : info.cooperative_matrix_shapes) {
            if (s.acc_f32) {
                l.coopmat_shapes.push_back(s);
            }
        }
    }
    l.prefer_coopmat = o.coopmat;
    if (o.coopmat_emulated && l.coopmat_shapes.empty() && l.fp16_arithmetic) {
        const auto& s = *o.coopmat_emulated;
        l.coopmat_shapes = {CoopMatShape{.m = s[0], .n = s[1], .k = s[2]}};
        l.coopmat_emulated = true;
    }
    l.compute_units = info.compute_units;
    if (o.compute_units && (info.compute_units == 0 || *o.compute_units < info.compute_units)) {
        l.compute_units = *o.compute_units;
        forced = true;
    }
    l.timestamps = info.timestamps;
    l.max_loop_iterations = quirks.max_loop_iterations;
    l.loop_unrolling = !quirks.avoid_loop_unrolling && !o.no_unroll;
    forced |= (o.no_fp16_storage && info.storage_16bit) || (o.no_fp16_arithmetic && info.float16_arithmetic) ||
              o.no_subgroup_ops || (o.no_subgroup_size_control && size_control) || (o.no_int64 && info.int64) ||
              (o.no_integer_dot && info.integer_dot_product);
    l.forced = forced;
    return l;
}

std::optional<std::string> storage_buffers_shortfall(const ComputeLimits& limits, std::uint32_t needed,
                                                     std::string_view what) {
    if (needed <= limits.storage_buffers) {
        return std::nullopt;
    }
    return std::string(what) + " needs " + fmt::to_string(needed) +
           " storage buffers per shader stage; the device allows " + fmt::to_string(limits.storage_buffers) +
           " (maxPerStageDescriptorStorageBuffers, or a forced storage_buffers limit)";
}

void check_storage_buffers(const ComputeLimits& limits, std::uint32_t needed, std::string_view what) {
    if (auto message = storage_buffers_shortfall(limits, needed, what)) {
        throw Error(std::move(*message));
    }
}

}  // namespace vkf
