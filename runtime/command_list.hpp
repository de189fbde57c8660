#pragma once
// Records dispatches and copies, then encodes them into a command buffer with the barriers
// their hazards need (read-after-write, write-after-read, write-after-write on overlapping
// buffer ranges) and nothing more. A finished list can be submitted any number of times.
// A list is used by one thread at a time; lists of one Context may be recorded and submitted
// from different threads at once.

#include "runtime/descriptor_allocator.hpp"
#include "runtime/limits.hpp"
#include "runtime/memory.hpp"
#include "runtime/pipeline.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

enum class Access { Read, Write, ReadWrite };

// An explicit byte range of a buffer (docs/DESIGN.md: never VK_WHOLE_SIZE).
struct BufferRange {
    const Buffer* buffer = nullptr;
    VkDeviceSize offset = 0;
    VkDeviceSize size = 0;
};
inline BufferRange whole(const Buffer& b) {
    return BufferRange{.buffer = &b, .offset = 0, .size = b.size()};
}

struct Binding {
    BufferRange range;
    Access access = Access::Read;
};

struct GroupCount {
    std::uint32_t x = 1, y = 1, z = 1;
};

struct Dispatch {
    const Pipeline* pipeline = nullptr;
    std::span<const Binding> bindings;
    std::span<const std::byte> push_constants;
    GroupCount groups;
    std::string_view label;  // names the dispatch in errors and GPU timings
};

template <class T>
std::span<const std::byte> push_bytes(const T& block) {
    return std::as_bytes(std::span<const T, 1>(&block, 1));
}

struct OpTiming {
    std::string label;
    double ms = 0.0;
};

class CommandList {
public:
    CommandList(const Device& device, const ComputeLimits& limits, bool profiling);
    ~CommandList();
    CommandList(const CommandList&) = delete;
    CommandList& operator=(const CommandList&) = delete;

    // Checks the dispatch against its pipeline and the device limits (throws vkf::Error).
    void dispatch(const Dispatch& d);
    void copy(BufferRange src, BufferRange dst, std::string_view label = "copy");
    // Runs `pipeline` over zero workgroups, `buffer` at every binding and zero push constants:
    // does nothing on the device, but makes drivers that compile at the first dispatch
    // (lavapipe) compile now (PipelinePreparation::finish).
    void warm_up(const Pipeline& pipeline, const Buffer& buffer);

    // Encodes into the list's own command buffer; submission does this when needed.
    void finish();
    bool finished() const { return finished_; }
    // Encodes into a command buffer the application owns and submits itself (recording
    // state, compute-capable queue family). Timings are readable after that work completes.
    void encode_into(VkCommandBuffer cmd);

    VkCommandBuffer command_buffer() const { return cmd_; }
    // Signalled by the list's submissions (Context::submit), one at a time.
    VkFence fence() const { return fence_; }
    std::size_t op_count() const { return ops_.size(); }
    std::size_t barrier_count() const { return barriers_; }                    // hazard barriers, known after encoding
    std::size_t dispatch_command_count() const { return dispatch_commands_; }  // after group-count splitting
    std::size_t descriptor_pool_count() const { return descriptors_.pool_count(); }
    bool profiling() const { return query_pool_ != VK_NULL_HANDLE || profiling_; }
    // GPU time per recorded op of the last completed submission (needs profiling=true).
    std::vector<OpTiming> timings() const;
    // Two timestamps around the whole list (cheap, unlike per-op profiling, which
    // serializes the work): call before the list is encoded, where the device has timestamps.
    void time_total();
    bool times_total() const { return total_timing_ || profiling_; }
    // GPU milliseconds from the list's first to its last command in the last completed
    // submission (needs time_total() or profiling).
    double total_ms() const;

private:
    // Buffers are resolved to their handles when recorded, so a Buffer object may move
    // (e.g. inside a growing vector) after recording; it must stay alive until the work ends.
    struct ResolvedBinding {
        VkBuffer buffer = VK_NULL_HANDLE;
        VkDeviceSize offset = 0;
        VkDeviceSize size = 0;
        Access access = Access::Read;
    };
    struct Op {
        const Pipeline* pipeline = nullptr;     // null for copies
        std::vector<ResolvedBinding> bindings;  // a copy: [src, dst]
        std::vector<std::byte> push;
        GroupCount groups;
        std::string label;
        VkDescriptorSet set = VK_NULL_HANDLE;
    };
    void check_range(const BufferRange& r, std::string_view label, bool storage) const;
    void encode(VkCommandBuffer cmd);

    const Device& device_;
    ComputeLimits limits_;
    bool profiling_;
    std::vector<Op> ops_;
    DescriptorAllocator descriptors_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkQueryPool query_pool_ = VK_NULL_HANDLE;
    bool total_timing_ = false;
    VkQueryPool total_pool_ = VK_NULL_HANDLE;
    bool finished_ = false;
    bool encoded_ = false;
    std::size_t barriers_ = 0;
    std::size_t dispatch_commands_ = 0;
};

}  // namespace vkf
