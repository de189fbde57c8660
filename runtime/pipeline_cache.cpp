#include "runtime/pipeline_cache.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/files.hpp"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <system_error>

namespace vkf {

namespace {

// Driver caches are kilobytes to tens of megabytes; anything larger is not ours.
constexpr std::uint64_t kPipelineCacheMaxBytes = std::uint64_t{512} << 20;

constexpr char kMagic[8] = {'V', 'K', 'F', 'P', 'I', 'P', 'E', '1'};

// File layout (little-endian): magic[8], payload size u64, FNV-1a-64 of payload u64,
// vendor u32, device u32, driver version u32, pad u32, device UUID[16], payload.
struct FileHeader {
    char magic[8];
    std::uint64_t payload_size;
    std::uint64_t checksum;
    std::uint32_t vendor_id;
    std::uint32_t device_id;
    std::uint32_t driver_version;
    std::uint32_t reserved;
    std::uint8_t device_uuid[VK_UUID_SIZE];
};
static_assert(sizeof(FileHeader) == 56);

std::uint64_t fnv1a(const char* data, std::size_t n) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::size_t i = 0; i < n; ++i) {
        h = (h ^ static_cast<unsigned char>(data[i])) * 0x100000001b3ull;
    }
    return h;
}

}  // namespace

std::optional<std::filesystem::path> PipelineCache::default_directory() {
    if (const char* dir = std::getenv("VKF_PIPELINE_CACHE_DIR")) {
        if (*dir == '\0') {
            return std::nullopt;  // explicitly off
        }
        return std::filesystem::path(dir);
    }
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
        return std::filesystem::path(xdg) / "vkformer";
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
        return std::filesystem::path(home) / ".cache" / "vkformer";
    }
    return std::nullopt;
}

std::string PipelineCache::file_name(const DeviceInfo& info) {
    return fmt::format("pipelines-{}-{:08x}.bin", info.uuid_hex(), info.driver_version);
}

PipelineCache::PipelineCache(const Device& device, const Instance& instance,
                             std::optional<std::filesystem::path> directory)
    : device_(device), instance_(instance) {
    std::vector<char> payload;
    if (directory && !directory->empty()) {
        stats_.file = *directory / file_name(device.info());
        std::error_code ec;
        if (std::filesystem::exists(stats_.file, ec)) {
            // A cache that cannot be read (a directory or a FIFO in its place, over the size
            // limit) is ignored with a warning like a corrupt one: it only saves time.
            std::optional<std::string> reason;
            try {
                const std::string text = read_file(stats_.file, kPipelineCacheMaxBytes, "pipeline cache");
                reason = validate_pipeline_cache_file(text, device.info(), payload);
            } catch (const Error& e) {
                reason = e.what();
            }
            if (reason) {
                stats_.rejected = *reason;
                payload.clear();
                instance.report(MessageSeverity::Warning,
                                "ignoring pipeline cache " + stats_.file.string() + ": " + *reason);
            } else {
                stats_.loaded = true;
                stats_.loaded_bytes = payload.size();
            }
        }
    }
    const VkPipelineCacheCreateInfo info{.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                         .initialDataSize = payload.size(),
                                         .pInitialData = payload.empty() ? nullptr : payload.data()};
    check(vkCreatePipelineCache(device.handle(), &info, nullptr, &cache_), "vkCreatePipelineCache");
}

PipelineCache::~PipelineCache() {
    try {
        save();
    } catch (const std::exception& e) {
        instance_.report(MessageSeverity::Warning, std::string("pipeline cache not saved: ") + e.what());
    }
    vkDestroyPipelineCache(device_.handle(), cache_, nullptr);
}

std::optional<std::string> validate_pipeline_cache_file(std::span<const char> bytes, const DeviceInfo& info,
                                                        std::vector<char>& payload) {
    if (bytes.size() < sizeof(FileHeader)) {
        return "file is " + fmt::to_string(bytes.size()) + " bytes, shorter than its header";
    }
    FileHeader h{};
    std::memcpy(&h, bytes.data(), sizeof h);
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
        return std::string("not a vkformer pipeline cache (bad magic)");
    }
    if (h.payload_size != bytes.size() - sizeof h) {
        return "payload size " + fmt::to_string(h.payload_size) + " does not match the file (" +
               fmt::to_string(bytes.size() - sizeof h) + " bytes after the header)";
    }
    const char* data = bytes.data() + sizeof h;
    if (fnv1a(data, h.payload_size) != h.checksum) {
        return std::string("checksum mismatch (corrupt file)");
    }
    if (h.vendor_id != info.vendor_id || h.device_id != info.device_id || h.driver_version != info.driver_version ||
        std::memcmp(h.device_uuid, info.device_uuid.data(), VK_UUID_SIZE) != 0) {
        return std::string("written for another device or driver version");
    }
    // The driver's own header (Vulkan spec, VkPipelineCacheHeaderVersionOne).
    if (h.payload_size < 32) {
        return std::string("driver data too short");
    }
    std::uint32_t header_length = 0, header_version = 0, vendor = 0, dev = 0;
    std::memcpy(&header_length, data, 4);
    std::memcpy(&header_version, data + 4, 4);
    std::memcpy(&vendor, data + 8, 4);
    std::memcpy(&dev, data + 12, 4);
    if (header_length < 32 || header_version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || vendor != info.vendor_id ||
        dev != info.device_id || std::memcmp(data + 16, info.pipeline_cache_uuid.data(), VK_UUID_SIZE) != 0) {
        return std::string("driver data is for another device or pipeline-cache version");
    }
    payload.assign(data, data + h.payload_size);
    return std::nullopt;
}

PipelineCacheStats PipelineCache::stats() const {
    const std::lock_guard lock(stats_mutex_);
    return stats_;
}

void PipelineCache::record_creation(bool hit, bool reported, double create_ms) {
    const std::lock_guard lock(stats_mutex_);
    stats_.pipelines_created += 1;
    stats_.create_ms += create_ms;
    stats_.cache_hits += hit ? 1 : 0;
    stats_.hits_reported |= reported;
    dirty_ |= !hit;
}

void PipelineCache::save() {
    {
        const std::lock_guard lock(stats_mutex_);
        if (stats_.file.empty() || !dirty_) {
            return;
        }
    }
    std::size_t size = 0;
    check(vkGetPipelineCacheData(device_.handle(), cache_, &size, nullptr), "vkGetPipelineCacheData");
    std::vector<char> payload(size);
    check(vkGetPipelineCacheData(device_.handle(), cache_, &size, payload.data()), "vkGetPipelineCacheData");
    payload.resize(size);

    const DeviceInfo& info = device_.info();
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.payload_size = payload.size();
    h.checksum = fnv1a(payload.data(), payload.size());
    h.vendor_id = info.vendor_id;
    h.device_id = info.device_id;
    h.driver_version = info.driver_version;
    std::memcpy(h.device_uuid, info.device_uuid.data(), VK_UUID_SIZE);

    std::error_code ec;
    std::filesystem::create_directories(stats_.file.parent_path(), ec);
    if (ec) {
        throw Error("cannot create the pipeline cache directory '" + stats_.file.parent_path().string() +
                    "': " + ec.message());
    }
    // A FIFO, device or directory in the cache's place is left alone: renaming over it would
    // replace a node the user put there, and the cache only saves time.
    const std::filesystem::file_status status = std::filesystem::status(stats_.file, ec);
    if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
        instance_.report(MessageSeverity::Warning,
                         "pipeline cache not saved: " + stats_.file.string() + " is not a regular file");
        const std::lock_guard lock(stats_mutex_);
        dirty_ = false;
        return;
    }
    // Written under a temporary name and renamed, so a concurrent reader never sees half a
    // file and a full disk leaves the previous cache in place.
    AtomicFile file(stats_.file, "pipeline cache");
    file.write(std::as_bytes(std::span<const FileHeader>(&h, 1)));
    file.write(std::as_bytes(std::span<const char>(payload)));
    file.commit();
    const std::lock_guard lock(stats_mutex_);
    stats_.saved_bytes = payload.size();
    dirty_ = false;
}

}  // namespace vkf
