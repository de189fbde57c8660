// Fuzzes VKF_DEVICE and --device (select_device, runtime/device.hpp): an index or a
// case-insensitive name substring, matched against a fixed list of devices (one of them not
// usable: Vulkan 1.0) and against an empty list. A selection must name a usable device.

#include "runtime/device.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

vkf::DeviceInfo device(std::uint32_t index, std::string name, vkf::DeviceType type, std::uint32_t api_minor) {
    vkf::DeviceInfo info;
    info.index = index;
    info.name = std::move(name);
    info.type = type;
    info.api_version = (1u << 22) | (api_minor << 12);
    return info;
}

std::vector<vkf::DeviceInfo> devices() {
    using vkf::DeviceType;
    return {device(0, "llvmpipe (LLVM 15.0.6, 256 bits)", DeviceType::Cpu, 3),
            device(1, "AMD Radeon RX 7900 XTX (RADV NAVI31)", DeviceType::DiscreteGpu, 3),
            device(2, "Intel(R) UHD Graphics 620 (KBL GT2)", DeviceType::IntegratedGpu, 0),
            device(3, "Mali-G78 \xc3\x9c\xc3\x9f", DeviceType::IntegratedGpu, 1)};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    static const std::vector<DeviceInfo> kDevices = devices();
    const std::string_view selector = fuzz::as_text(data, size);
    fuzz::run_parser([&] {
        const std::size_t chosen = select_device(kDevices, selector);
        fuzz::check(chosen < kDevices.size() && chosen != 2, "the selection is a usable device");
    });
    fuzz::run_parser([&] {
        select_device({}, selector);
        fuzz::check(false, "no device is selected from an empty list");
    });
    return 0;
}
