// vkf-info: what vkformer sees on this machine. Lists every Vulkan device with the
// capabilities and limits vkformer's kernels depend on, marks the device it would pick,
// and optionally proves the device works with a small dispatch (--smoke). The JSON form
// is what bug reports and benchmark result files carry.

#include "apps/common/cli.hpp"
#include "host/ops/elementwise.hpp"
#include "runtime/context.hpp"
#include "runtime/device.hpp"
#include "host/io/json.hpp"
#include "runtime/device_info_json.hpp"
#include "runtime/error.hpp"
#include "runtime/instance.hpp"
#include "runtime/limits.hpp"
#include "runtime/quirks.hpp"
#include "vkf_version.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>


namespace {

constexpr const char* kUsage = R"(usage: vkf-info [options]

Lists the Vulkan devices vkformer can use, with the capabilities and limits its kernels
depend on, and marks the device it selects by default.

options:
  --json          print one JSON document instead of text
  --limits SPEC   lower the selected device's limits as vkformer would (merged over
                  VKF_LIMITS): "phone", or comma-separated shared_memory=N,
                  workgroup_invocations=N, workgroup_count=N, storage_buffer_range=N,
                  push_constants=N, no_fp16_storage, no_fp16_arithmetic, no_subgroup_ops
                  (sizes accept K/M/G suffixes)
  --smoke         also run a fill + add dispatch on the selected device and check it
  -h, --help      show this help

environment:
  VKF_DEVICE      select a device by index or name substring
  VKF_LIMITS      limit overrides, as --limits
  VKF_VALIDATION  1 enables the Khronos validation layer; any message makes vkf-info fail
)";

using vkf::cli::kExitFailure;
using vkf::cli::kExitUsage;
using vkf::cli::UsageError;

struct Options {
    bool json = false;
    bool smoke = false;
    bool help = false;
    vkf::LimitOverrides limits; // from --limits only; VKF_LIMITS is merged under it later
};

Options parse_options(int argc, char** argv) {
    Options options;
    vkf::cli::ArgReader a(argc, argv);
    while (a.next()) {
        const std::string_view name = a.name();
        if (name == "--json") {
            a.flag();
            options.json = true;
        } else if (name == "--smoke") {
            a.flag();
            options.smoke = true;
        } else if (name == "-h" || name == "--help") {
            a.flag();
            options.help = true;
        } else if (name == "--limits") {
            options.limits = vkf::cli::parse_limits(name, a.value(), options.limits);
        } else {
            a.unknown();
        }
    }
    return options;
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
};

struct SmokeResult {
    bool ok = false;
    std::size_t elements = 0;
    std::size_t mismatches = 0;
    std::optional<double> gpu_ms; // absent without timestamps
    std::string failure;          // what went wrong when !ok
};

std::string fixed(double v, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, v);
    return buffer;
}

std::string hex(std::uint32_t v, int digits = 4) {
    char buffer[16];
    std::snprintf(buffer, sizeof(buffer), "0x%0*x", digits, v);
    return buffer;
}

// "64 KiB", "7.63 GiB": whole numbers where exact, so powers of two read as such.
std::string size_text(std::uint64_t bytes) {
    static constexpr const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    std::uint64_t scale = 1;
    while (unit + 1 < 5 && bytes >= scale * 1024) {
        scale *= 1024;
        ++unit;
    }
    if (bytes % scale == 0) {
        return std::to_string(bytes / scale) + " " + units[unit];
    }
    return fixed(static_cast<double>(bytes) / static_cast<double>(scale), 2) + " " + units[unit];
}

// Limits are compared against specifications and other tools, so the exact byte count
// stays next to the readable one.
std::string size_with_bytes(std::uint64_t bytes) {
    const std::string readable = size_text(bytes);
    return bytes < 1024 ? readable : readable + " (" + std::to_string(bytes) + ")";
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

std::string triple(const std::array<std::uint32_t, 3>& v) {
    return std::to_string(v[0]) + " x " + std::to_string(v[1]) + " x " + std::to_string(v[2]);
}

std::string subgroup_ops_text(const vkf::DeviceInfo& info) {
    if (!info.subgroup_in_compute) {
        return "none (no subgroup operations in compute shaders)";
    }
    const vkf::SubgroupOps& ops = info.subgroup_ops;
    const std::pair<bool, const char*> all[] = {
        {ops.basic, "basic"},     {ops.vote, "vote"},         {ops.arithmetic, "arithmetic"},
        {ops.ballot, "ballot"},   {ops.shuffle, "shuffle"},   {ops.shuffle_relative, "shuffle_relative"},
        {ops.clustered, "clustered"}, {ops.quad, "quad"},
    };
    std::string out;
    for (const auto& [supported, name] : all) {
        if (supported) {
            out += (out.empty() ? "" : " ") + std::string(name);
        }
    }
    return out.empty() ? "none" : out;
}

// "key: value" lines, printed with the values aligned.
class Section {
public:
    void add(std::string key, std::string value) { lines_.emplace_back(std::move(key), std::move(value)); }
    void print(std::ostream& out, std::string_view indent) const {
        std::size_t width = 0;
        for (const auto& line : lines_) {
            width = std::max(width, line.first.size());
        }
        for (const auto& [key, value] : lines_) {
            out << indent << key << ':' << std::string(width - key.size() + 1, ' ') << value << '\n';
        }
    }

private:
    std::vector<std::pair<std::string, std::string>> lines_;
};

Section device_section(const vkf::DeviceInfo& info, const vkf::DriverQuirks& quirks) {
    Section s;
    s.add("type", vkf::to_string(info.type));
    s.add("vendor", info.vendor_name + " (" + hex(info.vendor_id) + ")");
    s.add("device id", hex(info.device_id));
    s.add("API version", vkf::format_version(info.api_version));
    s.add("driver name", info.driver_name.empty() ? "not reported" : info.driver_name);
    s.add("driver info", info.driver_info.empty() ? "not reported" : info.driver_info);
    s.add("driver version", info.driver_version_text + " (raw " + hex(info.driver_version, 8) + ")");
    s.add("driver id", std::to_string(info.driver_id) + " (" + vkf::driver_id_name(info.driver_id) + ")");
    s.add("device UUID", info.uuid_hex());
    s.add("driver UUID", vkf::hex_bytes(info.driver_uuid.data(), info.driver_uuid.size()));
    s.add("subgroup size",
          std::to_string(info.subgroup_size) + " (min " + std::to_string(info.min_subgroup_size) + ", max " +
              std::to_string(info.max_subgroup_size) + ", size control: " + yes_no(info.subgroup_size_control) + ")");
    s.add("subgroup operations", subgroup_ops_text(info));
    s.add("max shared memory", size_with_bytes(info.max_shared_memory));
    s.add("max workgroup size", triple(info.max_workgroup_size) + ", " +
                                    std::to_string(info.max_workgroup_invocations) + " invocations");
    s.add("max workgroup count", triple(info.max_workgroup_count));
    s.add("max push constants", size_with_bytes(info.max_push_constants));
    s.add("max storage buffer range", size_with_bytes(info.max_storage_buffer_range));
    s.add("min storage offset alignment", size_with_bytes(info.min_storage_buffer_offset_alignment));
    s.add("max memory allocations", std::to_string(info.max_memory_allocation_count));
    s.add("max allocation size", size_with_bytes(info.max_memory_allocation_size));
    for (std::size_t h = 0; h < info.memory_heaps.size(); ++h) {
        const vkf::MemoryHeapInfo& heap = info.memory_heaps[h];
        std::string text = size_text(heap.size);
        text += heap.device_local ? ", device-local" : "";
        text += heap.host_visible ? ", host-visible" : "";
        s.add("memory heap " + std::to_string(h), text);
    }
    s.add("16-bit storage", yes_no(info.storage_16bit));
    s.add("8-bit storage", yes_no(info.storage_8bit));
    s.add("float16 arithmetic", yes_no(info.float16_arithmetic));
    s.add("int8 arithmetic", yes_no(info.int8_arithmetic));
    s.add("NV cooperative matrix", yes_no(info.cooperative_matrix_nv));
    s.add("timestamps", info.timestamps ? "yes (" + std::to_string(info.timestamp_valid_bits) + " valid bits, " +
                                              fixed(info.timestamp_period_ns, 3) + " ns per tick)"
                                        : "no");
    s.add("compute queue family",
          info.compute_queue_family == UINT32_MAX ? "none" : std::to_string(info.compute_queue_family));
    if (quirks.reasons.empty()) {
        s.add("driver quirks", "none");
    }
    for (const std::string& reason : quirks.reasons) {
        s.add("driver quirk", reason);
    }
    return s;
}

Section limits_section(const vkf::ComputeLimits& l, const vkf::LimitOverrides& overrides) {
    Section s;
    s.add("overrides", overrides.describe());
    s.add("shared memory", size_with_bytes(l.shared_memory));
    s.add("workgroup invocations", std::to_string(l.workgroup_invocations));
    s.add("workgroup size", triple(l.workgroup_size));
    s.add("workgroup count", triple(l.workgroup_count));
    s.add("push constants", size_with_bytes(l.push_constants));
    s.add("storage buffer range", size_with_bytes(l.storage_buffer_range));
    s.add("storage offset alignment", size_with_bytes(l.storage_offset_alignment));
    s.add("subgroup size", std::to_string(l.subgroup_size));
    s.add("fp16 storage", yes_no(l.fp16_storage));
    s.add("fp16 arithmetic", yes_no(l.fp16_arithmetic));
    s.add("subgroup ops", yes_no(l.subgroup_ops));
    s.add("timestamps", yes_no(l.timestamps));
    s.add("lowered by overrides", yes_no(l.forced));
    return s;
}

void print_text(const std::vector<vkf::DeviceInfo>& devices, const SelectedDevice& selected) {
    std::cout << "vkformer " << vkf::build::kVersion << ": " << devices.size() << " Vulkan device"
              << (devices.size() == 1 ? "" : "s") << "\n";
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const vkf::DeviceInfo& info = devices[i];
        std::cout << "\ndevice " << info.index << ": " << info.name << (i == selected.index ? " (selected)" : "")
                  << "\n";
        device_section(info, vkf::quirks_for(info)).print(std::cout, "  ");
    }
    std::cout << "\neffective limits of device " << devices[selected.index].index << ":\n";
    limits_section(selected.limits, selected.overrides).print(std::cout, "  ");
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
    constexpr float kA = 1.5f, kB = 2.25f, kSum = 3.75f; // exact in binary: a mismatch is a real error
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
        smoke.failure = std::to_string(smoke.mismatches) + " of " + std::to_string(kElements) +
                        " elements differ from " + fixed(kSum, 2) + "; the first at index " +
                        std::to_string(first_bad) + " is " + std::to_string(result[first_bad]);
    }
    if (ctx.validation_message_count() > 0) {
        smoke.ok = false;
        smoke.failure += (smoke.failure.empty() ? "" : "; ") + std::to_string(ctx.validation_message_count()) +
                         " validation message(s)";
    }
    return smoke;
}

int run(const Options& options) {
    const bool validation = env("VKF_VALIDATION").value_or("0") == "1";
    std::vector<vkf::DeviceInfo> devices;
    SelectedDevice selected;
    std::size_t listing_messages = 0;
    {
        // Only enumerates: a Context (and a VkDevice) is created for --smoke alone.
        const vkf::Instance instance(vkf::InstanceOptions{.validation = validation});
        devices = vkf::list_devices(instance);
        if (devices.empty()) {
            throw vkf::Error("no Vulkan device found; install a Vulkan driver (lavapipe: mesa-vulkan-drivers)");
        }
        selected.index = vkf::select_device(devices, env("VKF_DEVICE").value_or(""));
        listing_messages = instance.validation_message_count();
    }
    // The same merge order as Context: the command line wins over VKF_LIMITS.
    try {
        selected.overrides = vkf::LimitOverrides::parse(env("VKF_LIMITS").value_or(""));
    } catch (const vkf::Error& e) {
        throw vkf::Error(std::string("VKF_LIMITS: ") + e.what());
    }
    selected.overrides = selected.overrides.merged_with(options.limits);
    const vkf::DeviceInfo& chosen = devices[selected.index];
    selected.limits = vkf::effective_limits(chosen, vkf::quirks_for(chosen), selected.overrides);

    std::optional<SmokeResult> smoke;
    if (options.json) {
        // The smoke result (which takes a while) is the last member; a failure there is
        // recorded in the document.
        nlohmann::ordered_json json = {{"vkformer_version", vkf::build::kVersion}, {"devices", nlohmann::ordered_json::array()}};
        for (const vkf::DeviceInfo& info : devices) {
            nlohmann::ordered_json device = info;
            device["quirks"] = vkf::quirks_for(info);
            json["devices"].push_back(std::move(device));
        }
        json["selected"] = selected.index;
        json["limit_overrides"] = selected.overrides.describe();
        json["effective_limits"] = selected.limits;
        if (options.smoke) {
            try {
                smoke = run_smoke(options.limits);
            } catch (const vkf::Error& e) {
                smoke = SmokeResult{.failure = e.what()};
            }
            json["smoke"] = smoke_json(*smoke);
        }
        std::cout << vkf::json_text(json) << '\n';
        if (smoke && !smoke->ok) {
            std::cerr << "vkf-info: smoke: FAILED: " << smoke->failure << '\n';
        }
    } else {
        print_text(devices, selected);
        std::cout.flush();
        if (options.smoke) {
            smoke = run_smoke(options.limits);
            if (smoke->ok) {
                std::cout << "\nsmoke: OK (" << smoke->elements << " elements, "
                          << (smoke->gpu_ms ? "GPU time " + fixed(*smoke->gpu_ms, 3) + " ms" : "no GPU timestamps")
                          << ")\n";
            } else {
                std::cerr << "vkf-info: smoke: FAILED: " << smoke->failure << '\n';
            }
        }
    }
    if (listing_messages > 0) {
        std::cerr << "vkf-info: " << listing_messages << " validation message(s) while listing devices\n";
        return kExitFailure;
    }
    return smoke && !smoke->ok ? kExitFailure : 0;
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    try {
        options = parse_options(argc, argv);
    } catch (const UsageError& e) {
        std::cerr << "vkf-info: " << e.message << " (see --help)\n";
        return kExitUsage;
    }
    if (options.help) {
        std::cout << kUsage;
        return 0;
    }
    try {
        return run(options);
    } catch (const vkf::Error& e) {
        std::cout.flush();
        std::cerr << "vkf-info: error: " << e.what() << '\n';
        return kExitFailure;
    }
}
