// vkf-info: what vkformer sees on this machine. Lists every Vulkan device with the
// capabilities and limits vkformer's kernels depend on, marks the device it would pick,
// and optionally proves the device works with a small dispatch (--smoke). The JSON form
// is what bug reports and benchmark result files carry.

#include "apps/common/app_main.hpp"
#include "apps/common/options.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/json.hpp"
#include "host/ops/elementwise.hpp"
#include "runtime/context.hpp"
#include "runtime/device.hpp"
#include "runtime/device_info_json.hpp"
#include "runtime/instance.hpp"
#include "runtime/limits.hpp"
#include "runtime/quirks.hpp"
#include "vkf_version.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

constexpr const char* kAbout =
    "Lists the Vulkan devices vkformer can use, with the capabilities and limits its kernels\n"
    "depend on, and marks the device it selects by default.\n";

constexpr const char* kEnvironment =
    "environment:\n"
    "  VKF_DEVICE      select a device by index or name substring\n"
    "  VKF_LIMITS      limit overrides, as --limits (e.g. spec_minimum: Vulkan's guaranteed limits)\n"
    "  VKF_VALIDATION  1 enables the Khronos validation layer; any message makes vkf-info fail";

struct Options {
    bool json = false;
    bool smoke = false;
    vkf::LimitOverrides limits;  // from --limits only; VKF_LIMITS is merged under it later
};

void declare_options(CLI::App& cli, Options& options) {
    cli.footer(kEnvironment);
    cli.add_flag("--json", options.json, "print one JSON document instead of text");
    vkf::app::add_limits(cli, options.limits);
    cli.add_flag("--smoke", options.smoke, "also run a fill + add dispatch on the selected device and check it");
}

std::optional<std::string> env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

// --- what is shown -------------------------------------------------------------------

struct SelectedDevice {
    std::size_t index = 0;
    vkf::LimitOverrides overrides;
    vkf::ComputeLimits limits;
    vkf::MemoryBudget memory;  // under the overrides' memory caps
};

struct SmokeResult {
    bool ok = false;
    std::size_t elements = 0;
    std::size_t mismatches = 0;
    std::optional<double> gpu_ms;  // absent without timestamps
    std::string failure;           // what went wrong when !ok
};

std::string hex(std::uint32_t v, int digits = 4) {
    return fmt::format("{:#0{}x}", v, digits + 2);
}

std::string yes_no(bool b) {
    return b ? "yes" : "no";
}

std::string triple(const std::array<std::uint32_t, 3>& v) {
    return fmt::format("{} x {} x {}", v[0], v[1], v[2]);
}

std::string subgroup_ops_text(const vkf::DeviceInfo& info) {
    if (!info.subgroup_in_compute) {
        return "none (no subgroup operations in compute shaders)";
    }
    const vkf::SubgroupOps& ops = info.subgroup_ops;
    const std::pair<bool, const char*> all[] = {
        {ops.basic, "basic"},         {ops.vote, "vote"},       {ops.arithmetic, "arithmetic"},
        {ops.ballot, "ballot"},       {ops.shuffle, "shuffle"}, {ops.shuffle_relative, "shuffle_relative"},
        {ops.clustered, "clustered"}, {ops.quad, "quad"},
    };
    std::vector<std::string> names;
    for (const auto& [supported, name] : all) {
        if (supported) {
            names.emplace_back(name);
        }
    }
    return names.empty() ? "none" : fmt::format("{}", fmt::join(names, " "));
}

// "key: value" lines, printed with the values aligned.
class Section {
public:
    void add(std::string key, std::string value) { lines_.emplace_back(std::move(key) + ":", std::move(value)); }
    void print(std::string_view indent) const {
        std::size_t width = 0;
        for (const auto& line : lines_) {
            width = std::max(width, line.first.size());
        }
        for (const auto& [key, value] : lines_) {
            fmt::print("{}{:<{}} {}\n", indent, key, width, value);
        }
    }

private:
    std::vector<std::pair<std::string, std::string>> lines_;
};

// The memory caps of VKF_LIMITS device_heap and host_heap (the Context's).
vkf::MemoryCaps memory_caps(const vkf::LimitOverrides& o) {
    return vkf::MemoryCaps{.device_local = o.device_heap, .host_visible = o.host_heap};
}

// "no", or whether the device can run it and the shapes it lists (M x N x K, accumulator).
std::string coopmat_text(const vkf::DeviceInfo& info) {
    if (!info.cooperative_matrix_nv) {
        return "no";
    }
    std::string shapes;
    for (const vkf::CoopMatShape& c : info.cooperative_matrix_shapes) {
        shapes += fmt::format("{}{}x{}x{} {}", shapes.empty() ? "" : ", ", c.m, c.n, c.k, c.acc_f32 ? "f32" : "f16");
    }
    return fmt::format("{} (fp16 shapes: {})", info.cooperative_matrix ? "yes" : "listed, not usable",
                       shapes.empty() ? "none" : shapes);
}

Section device_section(const vkf::DeviceInfo& info, const vkf::DriverQuirks& quirks, const vkf::MemoryBudget& budget) {
    using vkf::size_with_bytes;
    Section s;
    s.add("type", vkf::to_string(info.type));
    s.add("vendor", fmt::format("{} ({})", info.vendor_name, hex(info.vendor_id)));
    s.add("device id", hex(info.device_id));
    s.add("API version", vkf::format_version(info.api_version));
    s.add("driver name", info.driver_name.empty() ? "not reported" : info.driver_name);
    s.add("driver info", info.driver_info.empty() ? "not reported" : info.driver_info);
    s.add("driver version", fmt::format("{} (raw {})", info.driver_version_text, hex(info.driver_version, 8)));
    s.add("driver id", fmt::format("{} ({})", info.driver_id, vkf::driver_id_name(info.driver_id)));
    s.add("device UUID", info.uuid_hex());
    s.add("driver UUID", vkf::hex_bytes(info.driver_uuid.data(), info.driver_uuid.size()));
    s.add("subgroup size", fmt::format("{} (min {}, max {}, size control: {}, full subgroups: {})", info.subgroup_size,
                                       info.min_subgroup_size, info.max_subgroup_size,
                                       yes_no(info.subgroup_size_control), yes_no(info.compute_full_subgroups)));
    s.add("subgroup operations", subgroup_ops_text(info));
    s.add("max shared memory", size_with_bytes(info.max_shared_memory));
    s.add("max workgroup size",
          fmt::format("{}, {} invocations", triple(info.max_workgroup_size), info.max_workgroup_invocations));
    s.add("max workgroup count", triple(info.max_workgroup_count));
    s.add("max push constants", size_with_bytes(info.max_push_constants));
    s.add("max storage buffers",
          fmt::format("{} per shader stage, {} per descriptor set", info.max_per_stage_storage_buffers,
                      info.max_descriptor_set_storage_buffers));
    s.add("max storage buffer range", size_with_bytes(info.max_storage_buffer_range));
    s.add("min storage offset alignment", size_with_bytes(info.min_storage_buffer_offset_alignment));
    s.add("max memory allocations", fmt::to_string(info.max_memory_allocation_count));
    s.add("max allocation size", size_with_bytes(info.max_memory_allocation_size));
    s.add("compute units", info.compute_units == 0 ? "not reported" : fmt::to_string(info.compute_units));
    for (std::size_t h = 0; h < info.memory_heaps.size(); ++h) {
        const vkf::MemoryHeapInfo& heap = info.memory_heaps[h];
        std::string budget_text;
        if (h < budget.heaps.size()) {
            budget_text = fmt::format("; budget {}, in use {}", vkf::size_text(budget.heaps[h].budget),
                                      vkf::size_text(budget.heaps[h].usage));
        }
        s.add(fmt::format("memory heap {}", h),
              fmt::format("{}{}{}{}", vkf::size_text(heap.size), heap.device_local ? ", device-local" : "",
                          heap.host_visible ? ", host-visible" : "", budget_text));
    }
    s.add("memory budget", info.memory_budget ? "VK_EXT_memory_budget" : "heap sizes (no VK_EXT_memory_budget)");
    s.add("16-bit storage", yes_no(info.storage_16bit));
    s.add("8-bit storage", yes_no(info.storage_8bit));
    s.add("float16 arithmetic", yes_no(info.float16_arithmetic));
    s.add("int8 arithmetic", yes_no(info.int8_arithmetic));
    s.add("integer dot product", yes_no(info.integer_dot_product));
    s.add("NV cooperative matrix", coopmat_text(info));
    s.add("timestamps", info.timestamps ? fmt::format("yes ({} valid bits, {} ns per tick)", info.timestamp_valid_bits,
                                                      vkf::fixed(info.timestamp_period_ns, 3))
                                        : "no");
    s.add("compute queue family",
          info.compute_queue_family == UINT32_MAX ? "none" : fmt::to_string(info.compute_queue_family));
    if (quirks.reasons.empty()) {
        s.add("driver quirks", "none");
    }
    for (const std::string& reason : quirks.reasons) {
        s.add("driver quirk", reason);
    }
    return s;
}

Section limits_section(const vkf::ComputeLimits& l, const vkf::LimitOverrides& overrides,
                       const vkf::MemoryBudget& memory) {
    using vkf::size_with_bytes;
    Section s;
    s.add("overrides", overrides.describe());
    s.add("shared memory", size_with_bytes(l.shared_memory));
    s.add("workgroup invocations", fmt::to_string(l.workgroup_invocations));
    s.add("workgroup size", triple(l.workgroup_size));
    s.add("workgroup count", triple(l.workgroup_count));
    s.add("push constants", size_with_bytes(l.push_constants));
    s.add("storage buffer range", size_with_bytes(l.storage_buffer_range));
    s.add("storage offset alignment", size_with_bytes(l.storage_offset_alignment));
    s.add("storage buffers", fmt::to_string(l.storage_buffers));
    s.add("subgroup size", fmt::to_string(l.subgroup_size));
    s.add("fp16 storage", yes_no(l.fp16_storage));
    s.add("fp16 arithmetic", yes_no(l.fp16_arithmetic));
    s.add("subgroup ops", yes_no(l.subgroup_ops));
    s.add("subgroup size control", yes_no(l.subgroup_size_control));
    s.add("64-bit integers", yes_no(l.int64));
    s.add("integer dot product", yes_no(l.integer_dot_product));
    s.add("cooperative matrices", l.coopmat_shapes.empty()
                                      ? "none"
                                      : fmt::format("{} fp16 x fp16 -> fp32 shapes{}", l.coopmat_shapes.size(),
                                                    l.prefer_coopmat ? ", matmul kernel opted in (coopmat)" : ""));
    s.add("compute units", l.compute_units == 0 ? "unknown" : fmt::to_string(l.compute_units));
    s.add("timestamps", yes_no(l.timestamps));
    s.add("lowered by overrides", yes_no(l.forced));
    s.add("memory for device buffers",
          fmt::format("{} device-local, {} host-visible fallback ({})", vkf::size_text(memory.device_local_available),
                      vkf::size_text(memory.host_visible_available), memory.source()));
    return s;
}

void print_text(const std::vector<vkf::DeviceInfo>& devices, const std::vector<vkf::MemoryBudget>& budgets,
                const SelectedDevice& selected) {
    fmt::print("vkformer {}: {}\n", vkf::build::kVersion, vkf::count_text(devices.size(), "Vulkan device"));
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const vkf::DeviceInfo& info = devices[i];
        fmt::print("\ndevice {}: {}{}\n", info.index, info.name, i == selected.index ? " (selected)" : "");
        device_section(info, vkf::quirks_for(info), budgets[i]).print("  ");
    }
    fmt::print("\neffective limits of device {}:\n", devices[selected.index].index);
    limits_section(selected.limits, selected.overrides, selected.memory).print("  ");
}

nlohmann::ordered_json budget_json(const vkf::MemoryBudget& b) {
    nlohmann::ordered_json heaps = nlohmann::ordered_json::array();
    for (const vkf::HeapBudget& h : b.heaps) {
        heaps.push_back({{"index", h.index},
                         {"size", h.size},
                         {"budget", h.budget},
                         {"usage", h.usage},
                         {"device_local", h.device_local},
                         {"host_visible", h.host_visible}});
    }
    return {{"source", b.source()},
            {"from_extension", b.from_extension},
            {"heaps", heaps},
            {"device_local_available", b.device_local_available},
            {"host_visible_available", b.host_visible_available}};
}

nlohmann::ordered_json smoke_json(const SmokeResult& smoke) {
    nlohmann::ordered_json json = {{"ok", smoke.ok}, {"elements", smoke.elements}, {"gpu_ms", nullptr}};
    if (smoke.gpu_ms) {
        json["gpu_ms"] = *smoke.gpu_ms;
    }
    if (!smoke.ok) {
        json["failure"] = smoke.failure;
    }
    return json;
}

// --- the smoke dispatch ----------------------------------------------------------------

// Fills two buffers, adds them on the GPU and checks every element on the host. The
// output buffer is filled with a poison value first so an unwritten element cannot pass.
SmokeResult run_smoke(const vkf::LimitOverrides& overrides) {
    constexpr std::size_t kElements = std::size_t{1} << 20;
    constexpr float kA = 1.5f, kB = 2.25f, kSum = 3.75f;  // exact in binary: a mismatch is a real error
    constexpr float kPoison = -1.0f;

    vkf::Context ctx(vkf::ContextOptions{.limits = overrides});
    const VkDeviceSize bytes = kElements * sizeof(float);
    const vkf::Buffer a = ctx.create_buffer(bytes, vkf::MemoryKind::Device, "smoke a");
    const vkf::Buffer b = ctx.create_buffer(bytes, vkf::MemoryKind::Device, "smoke b");
    const vkf::Buffer sum = ctx.create_buffer(bytes, vkf::MemoryKind::Device, "smoke sum");

    const bool timestamps = ctx.limits().timestamps;
    const auto list = ctx.command_list(timestamps);
    vkf::record_fill(ctx, *list, vkf::whole(sum), kPoison);
    vkf::record_fill(ctx, *list, vkf::whole(a), kA);
    vkf::record_fill(ctx, *list, vkf::whole(b), kB);
    vkf::record_add(ctx, *list, vkf::whole(a), vkf::whole(b), vkf::whole(sum));
    ctx.submit(*list);

    std::vector<float> result(kElements, 0.0f);
    ctx.download(sum, std::span<float>(result));

    SmokeResult smoke{.elements = kElements};
    std::size_t first_bad = 0;
    for (std::size_t i = 0; i < kElements; ++i) {
        if (result[i] != kSum) {
            if (smoke.mismatches == 0) {
                first_bad = i;
            }
            ++smoke.mismatches;
        }
    }
    if (timestamps) {
        double ms = 0.0;
        for (const vkf::OpTiming& t : list->timings()) {
            ms += t.ms;
        }
        smoke.gpu_ms = ms;
    }
    smoke.ok = smoke.mismatches == 0;
    if (!smoke.ok) {
        smoke.failure = fmt::format("{} of {} elements differ from {}; the first at index {} is {}", smoke.mismatches,
                                    kElements, kSum, first_bad, result[first_bad]);
    }
    if (ctx.validation_message_count() > 0) {
        smoke.ok = false;
        smoke.failure += fmt::format("{}{} validation message(s)", smoke.failure.empty() ? "" : "; ",
                                     ctx.validation_message_count());
    }
    return smoke;
}

int run(const Options& options) {
    const bool validation = env("VKF_VALIDATION").value_or("0") == "1";
    std::vector<vkf::DeviceInfo> devices;
    std::vector<vkf::MemoryBudget> budgets;  // before any allocation, without caps
    SelectedDevice selected;
    std::size_t listing_messages = 0;
    // The same merge order as Context: the command line wins over VKF_LIMITS.
    try {
        selected.overrides = vkf::LimitOverrides::parse(env("VKF_LIMITS").value_or(""));
    } catch (const vkf::Error& e) {
        throw vkf::Error(std::string("VKF_LIMITS: ") + e.what());
    }
    selected.overrides = selected.overrides.merged_with(options.limits);
    {
        // Only enumerates: a Context (and a VkDevice) is created for --smoke alone.
        const vkf::Instance instance(vkf::InstanceOptions{.validation = validation});
        devices = vkf::list_devices(instance);
        if (devices.empty()) {
            throw vkf::Error("no Vulkan device found; install a Vulkan driver (lavapipe: mesa-vulkan-drivers)");
        }
        selected.index = vkf::select_device(devices, env("VKF_DEVICE").value_or(""));
        const auto physical = instance.physical_devices();
        for (std::size_t i = 0; i < devices.size(); ++i) {
            budgets.push_back(vkf::query_memory_budget(physical[i], devices[i].memory_budget));
        }
        selected.memory = vkf::query_memory_budget(physical[selected.index], devices[selected.index].memory_budget,
                                                   memory_caps(selected.overrides));
        listing_messages = instance.validation_message_count();
    }
    const vkf::DeviceInfo& chosen = devices[selected.index];
    selected.limits = vkf::effective_limits(chosen, vkf::quirks_for(chosen), selected.overrides);

    std::optional<SmokeResult> smoke;
    if (options.json) {
        // The smoke result (which takes a while) is the last member; a failure there is
        // recorded in the document.
        nlohmann::ordered_json json = {{"vkformer_version", vkf::build::kVersion},
                                       {"devices", nlohmann::ordered_json::array()}};
        for (std::size_t i = 0; i < devices.size(); ++i) {
            nlohmann::ordered_json device = devices[i];
            device["quirks"] = vkf::quirks_for(devices[i]);
            device["memory"] = budget_json(budgets[i]);
            json["devices"].push_back(std::move(device));
        }
        json["selected"] = selected.index;
        json["limit_overrides"] = selected.overrides.describe();
        json["effective_limits"] = selected.limits;
        json["effective_memory"] = budget_json(selected.memory);
        if (options.smoke) {
            try {
                smoke = run_smoke(options.limits);
            } catch (const vkf::Error& e) {
                smoke = SmokeResult{.failure = e.what()};
            }
            json["smoke"] = smoke_json(*smoke);
        }
        fmt::print("{}\n", vkf::json_text(json));
    } else {
        print_text(devices, budgets, selected);
        std::fflush(stdout);
        if (options.smoke) {
            smoke = run_smoke(options.limits);
            if (smoke->ok) {
                fmt::print("\nsmoke: OK ({} elements, {})\n", smoke->elements,
                           smoke->gpu_ms ? "GPU time " + vkf::fixed(*smoke->gpu_ms, 3) + " ms" : "no GPU timestamps");
            }
        }
    }
    std::fflush(stdout);
    if (smoke && !smoke->ok) {
        fmt::print(stderr, "vkf-info: smoke: FAILED: {}\n", smoke->failure);
    }
    if (listing_messages > 0) {
        fmt::print(stderr, "vkf-info: {} validation message(s) while listing devices\n", listing_messages);
        return vkf::app::kExitFailure;
    }
    return smoke && !smoke->ok ? vkf::app::kExitFailure : vkf::app::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-info", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] { return run(options); });
}
