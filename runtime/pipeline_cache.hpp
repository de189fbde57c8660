#pragma once
// A VkPipelineCache kept on disk, one file per device UUID and driver version, so a second
// process start creates its pipelines from the cache. The file carries its own header and
// checksum: a corrupt, truncated or foreign file is ignored with a warning, never trusted.

#include "runtime/device.hpp"

#include <filesystem>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

struct PipelineCacheStats {
    std::filesystem::path file;  // empty when the disk cache is off
    bool loaded = false;         // a valid file was read and handed to the driver
    std::uint64_t loaded_bytes = 0;
    std::string rejected;  // why a file that existed was ignored
    std::uint64_t saved_bytes = 0;
    std::uint32_t pipelines_created = 0;
    std::uint32_t cache_hits = 0;  // reported by VK_EXT_pipeline_creation_feedback
    // Host time spent in vkCreateComputePipelines. Drivers that compile at the first dispatch
    // (lavapipe: LLVM then) pay the rest there: time to first token shows it.
    double create_ms = 0.0;
    bool hits_reported = false;  // the driver reports hits at all
};

// Checks a pipeline cache file's bytes before they reach the driver: vkformer's header
// (magic, payload size, checksum, vendor, device, driver version, device UUID against
// `device`) and the driver's own (VkPipelineCacheHeaderVersionOne against `device`). Returns
// why the file must be ignored, or nullopt with `payload` holding the driver data. No Vulkan
// call: the file is the input a fuzzer feeds it (tests/fuzz/pipeline_cache.cpp).
std::optional<std::string> validate_pipeline_cache_file(std::span<const char> bytes, const DeviceInfo& device,
                                                        std::vector<char>& payload);

class PipelineCache {
public:
    // `directory` empty: in-memory cache only.
    PipelineCache(const Device& device, const Instance& instance, std::optional<std::filesystem::path> directory);
    ~PipelineCache();  // saves when anything new was created
    PipelineCache(const PipelineCache&) = delete;
    PipelineCache& operator=(const PipelineCache&) = delete;

    VkPipelineCache handle() const { return cache_; }
    PipelineCacheStats stats() const;
    // Called by every vkCreateComputePipelines, from any thread (deferred pipelines).
    void record_creation(bool hit, bool reported, double create_ms);
    void save();

    // $VKF_PIPELINE_CACHE_DIR, else $XDG_CACHE_HOME/vkformer, else $HOME/.cache/vkformer.
    static std::optional<std::filesystem::path> default_directory();
    static std::string file_name(const DeviceInfo& info);

private:
    const Device& device_;
    const Instance& instance_;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    mutable std::mutex stats_mutex_;  // stats_ and dirty_
    PipelineCacheStats stats_;
    bool dirty_ = false;
};

}  // namespace vkf
