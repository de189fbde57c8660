#pragma once
// Everything vkformer needs on one device: instance, device, limits, memory, pipelines,
// transfers and submission. Command lists, buffers and pipelines must not outlive their
// Context.
//
// Threads: a Context may be used from several threads at once. Submission (the queue is
// externally synchronized in Vulkan), staged transfers, the pipeline map and the memory
// allocator each take a lock of their own; every command list has its own fence, so threads
// wait for their own work. What is not shared is used by one thread at a time: a
// CommandList, a Buffer's contents while it is written, a Session (host/model/model.hpp).
// Constructing and destroying the Context itself is not concurrent with its use. Several
// Contexts may live in one process and in different threads (each has its own VkInstance
// and VkDevice). A `ContextOptions::on_message` callback may be called from any thread using
// the Context. docs/DESIGN.md "Threads".
//
// Faults: a submission that does not finish within the timeout, or a lost device, throws
// DeviceLostError; the Context then refuses further submissions, uploads and downloads (the
// work that timed out may still use any buffer), and the device defers the
// destruction of buffers, command lists and memory until it is idle (the Context's
// destructor waits for it), since the GPU may still be running the work that timed out.

#include "runtime/command_list.hpp"
#include "runtime/device.hpp"
#include "runtime/instance.hpp"
#include "runtime/limits.hpp"
#include "runtime/memory.hpp"
#include "runtime/pipeline.hpp"
#include "runtime/pipeline_cache.hpp"
#include "runtime/pipeline_preparation.hpp"
#include "runtime/quirks.hpp"
#include "runtime/timeout.hpp"

#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

// Test hooks: device faults on purpose (Context::inject_faults), so that tests can check what
// an error leaves behind. vkformer never sets them itself.
struct FaultInjection {
    // Device-memory requests (vkCreateBuffer, vkAllocateMemory) that fail as if the driver
    // returned VK_ERROR_OUT_OF_DEVICE_MEMORY.
    std::optional<AllocationFaults> allocations;
    // After this many more fence waits, the next one reports VK_ERROR_DEVICE_LOST at once,
    // without waiting: the work it was for goes on running, as after a real timeout.
    std::optional<std::uint64_t> lose_device_after_waits;
};

struct ContextOptions {
    std::optional<bool> validation;                           // default: VKF_VALIDATION=1 (yes, true, on) turns it on
    MessageCallback on_message;                               // default: print warnings and errors to stderr
    std::optional<std::string> device;                        // index or name substring; default: VKF_DEVICE
    LimitOverrides limits;                                    // applied over VKF_LIMITS
    std::optional<std::filesystem::path> pipeline_cache_dir;  // default PipelineCache::default_directory(); "" = off
    // Per submission, 1 ms to kMaxTimeout (runtime/timeout.hpp); default VKF_TIMEOUT_MS (a
    // whole number of milliseconds), else 120 s (600 s on CPU drivers such as lavapipe).
    std::optional<std::chrono::milliseconds> timeout;
    VkDeviceSize staging_size = 16ull << 20;
    VkDeviceSize memory_block_size = 64ull << 20;
    // Move data through the staging buffer even where device memory is host-visible, as on
    // a discrete GPU: lets unified-memory devices (lavapipe) test that path.
    bool force_staging = false;
    // An application that owns its Vulkan objects hands them over here (both or neither).
    VkInstance external_instance = VK_NULL_HANDLE;
    std::uint32_t external_api_version = VK_API_VERSION_1_1;
    std::optional<ExternalDevice> external_device;
};

class Context {
public:
    explicit Context(ContextOptions options = {});
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const DeviceInfo& device_info() const { return device_->info(); }
    const ComputeLimits& limits() const { return limits_; }
    const DriverQuirks& quirks() const { return quirks_; }
    const LimitOverrides& overrides() const { return overrides_; }
    const Device& device() const { return *device_; }
    const Instance& instance() const { return *instance_; }
    bool validation_enabled() const { return instance_->validation_enabled(); }
    std::size_t validation_message_count() const { return instance_->validation_message_count(); }
    void report(MessageSeverity severity, std::string_view message) const { instance_->report(severity, message); }

    Buffer create_buffer(VkDeviceSize size, MemoryKind kind = MemoryKind::Device, std::string name = "buffer");
    void upload(const Buffer& dst, std::span<const std::byte> bytes, VkDeviceSize offset = 0);
    void download(const Buffer& src, std::span<std::byte> bytes, VkDeviceSize offset = 0);
    template <class T>
    void upload(const Buffer& dst, std::span<const T> values, VkDeviceSize offset = 0) {
        upload(dst, std::as_bytes(values), offset);
    }
    template <class T>
    void download(const Buffer& src, std::span<T> values, VkDeviceSize offset = 0) {
        download(src, std::as_writable_bytes(values), offset);
    }

    // Created once per PipelineDesc::key() and reused. While a PipelinePreparation is alive,
    // a new pipeline's VkPipeline is made on its workers (runtime/pipeline_preparation.hpp).
    const Pipeline& pipeline(const PipelineDesc& desc);
    std::size_t pipeline_count() const;
    // PipelinePreparation's constructor and finish() (or destructor).
    void begin_preparation(PipelinePreparation& preparation);
    void end_preparation(PipelinePreparation& preparation);

    std::unique_ptr<CommandList> command_list(bool profiling = false) const;
    // Finishes the list if needed, submits it and waits. Throws DeviceLostError when the
    // work does not finish within the timeout or the device is lost; later submissions then
    // throw DeviceLostError too.
    void submit(CommandList& list);
    // A submission timed out or the device was lost: this context submits nothing more.
    bool lost() const { return device_->lost(); }

    PipelineCacheStats pipeline_cache_stats() const;
    void save_pipeline_cache();
    MemoryStats memory_stats() const { return allocator_->stats(); }
    // Every heap's budget and usage now (VK_EXT_memory_budget where the device has it, else
    // the heap sizes and vkformer's own blocks), and what Device buffers can still get in
    // device-local and, falling back, host-visible memory (VKF_LIMITS device_heap, host_heap).
    MemoryBudget memory_budget() const { return allocator_->budget(); }
    std::chrono::milliseconds timeout() const { return timeout_; }

    // Tests only: replaces the faults injected before (FaultInjection{}: none).
    void inject_faults(const FaultInjection& faults);

private:
    // Records and submits one copy between the staging buffer's half `slot` and the buffer,
    // signalling transfer_fences_[slot]; waits for it when `wait`.
    void transfer(const Buffer& device_buffer, VkDeviceSize offset, VkDeviceSize size, bool to_device,
                  std::uint32_t slot, bool wait);
    void throw_if_lost() const;
    void submit(VkCommandBuffer cmd, VkFence fence);
    void wait(VkFence fence, const char* what);
    bool injected_device_loss();

    std::unique_ptr<Instance> instance_;
    std::unique_ptr<Device> device_;
    DriverQuirks quirks_;
    LimitOverrides overrides_;
    ComputeLimits limits_;
    std::unique_ptr<MemoryAllocator> allocator_;
    std::unique_ptr<PipelineCache> cache_;
    mutable std::mutex pipeline_mutex_;  // pipelines_, preparations_ and saving cache_
    std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
    std::vector<PipelinePreparation*> preparations_;  // alive ones, the newest last
    std::chrono::milliseconds timeout_{120000};
    VkDeviceSize staging_size_;
    bool force_staging_ = false;
    std::mutex queue_mutex_;  // vkQueueSubmit: the queue is externally synchronized
    std::mutex fault_mutex_;
    std::optional<std::uint64_t> lose_device_after_waits_;
    std::mutex transfer_mutex_;  // staged uploads and downloads: staging_ and the transfer_ members
    Buffer staging_;
    VkCommandPool transfer_pool_ = VK_NULL_HANDLE;
    // Two of each: an upload fills one half of the staging buffer while the other half's
    // copy runs.
    std::array<VkCommandBuffer, 2> transfer_cmds_{};
    std::array<VkFence, 2> transfer_fences_{};
};

// The optional process-wide context (created on first use, never during static
// initialization), for applications that want one device and no plumbing.
Context& default_context();

}  // namespace vkf
