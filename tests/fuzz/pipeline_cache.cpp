// Fuzzes the pipeline cache file check (validate_pipeline_cache_file,
// runtime/pipeline_cache.hpp): the bytes read from $VKF_PIPELINE_CACHE_DIR before they would
// be handed to the driver's vkCreatePipelineCache. Every input is checked as it is and, to
// get past the checksum a mutation almost always breaks, once more with vkformer's header
// repaired (payload size, FNV-1a checksum and this device's identity written in), so the
// driver-header checks behind them are fuzzed too. An accepted file's payload must be the
// bytes after the 56-byte header, starting with a driver header for this device.

#include "runtime/pipeline_cache.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace {

constexpr std::size_t kHeaderBytes = 56;  // magic, size, checksum, vendor, device, driver, pad, UUID

// The device the files are checked against (the seeds were written for it: make_seeds.cpp).
vkf::DeviceInfo device() {
    vkf::DeviceInfo info;
    info.vendor_id = 0x10005;
    info.device_id = 0x0000;
    info.driver_version = 0x5803000;
    for (std::size_t i = 0; i < info.device_uuid.size(); ++i) {
        info.device_uuid[i] = static_cast<std::uint8_t>(0x10 + i);
        info.pipeline_cache_uuid[i] = static_cast<std::uint8_t>(0xa0 + i);
    }
    return info;
}

std::uint64_t fnv1a(std::span<const char> bytes) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : bytes) {
        h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    }
    return h;
}

void check_file(std::span<const char> bytes, const vkf::DeviceInfo& info) {
    std::vector<char> payload;
    const std::optional<std::string> reason = vkf::validate_pipeline_cache_file(bytes, info, payload);
    if (reason) {
        vkf::fuzz::check(!reason->empty(), "a refusal says why");
        return;
    }
    vkf::fuzz::check(bytes.size() >= kHeaderBytes + 32, "an accepted file holds both headers");
    vkf::fuzz::check(payload.size() == bytes.size() - kHeaderBytes &&
                         std::memcmp(payload.data(), bytes.data() + kHeaderBytes, payload.size()) == 0,
                     "the payload is the bytes after vkformer's header");
    vkf::fuzz::check(std::memcmp(payload.data() + 16, info.pipeline_cache_uuid.data(), 16) == 0,
                     "the driver data is for this device's pipeline cache UUID");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const vkf::DeviceInfo info = device();
    const std::span<const char> bytes(reinterpret_cast<const char*>(data), size);
    vkf::fuzz::run_parser([&] { check_file(bytes, info); });
    if (size >= kHeaderBytes) {
        std::vector<char> repaired(bytes.begin(), bytes.end());
        const std::uint64_t payload_size = size - kHeaderBytes;
        const std::uint64_t checksum = fnv1a(std::span(repaired).subspan(kHeaderBytes));
        std::memcpy(repaired.data() + 8, &payload_size, 8);
        std::memcpy(repaired.data() + 16, &checksum, 8);
        std::memcpy(repaired.data() + 24, &info.vendor_id, 4);
        std::memcpy(repaired.data() + 28, &info.device_id, 4);
        std::memcpy(repaired.data() + 32, &info.driver_version, 4);
        std::memcpy(repaired.data() + 40, info.device_uuid.data(), 16);
        vkf::fuzz::run_parser([&] { check_file(repaired, info); });
    }
    return 0;
}
