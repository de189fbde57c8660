#include "runtime/command_list.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf {

namespace {

constexpr VkPipelineStageFlags kWorkStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kReadsAndWrites =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

void memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stages, VkAccessFlags src,
                    VkPipelineStageFlags dst_stages, VkAccessFlags dst) {
    const VkMemoryBarrier barrier{
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src, .dstAccessMask = dst};
    vkCmdPipelineBarrier(cmd, src_stages, dst_stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

bool writes(Access a) {
    return a != Access::Read;
}

}  // namespace

CommandList::CommandList(const Device& device, const ComputeLimits& limits, bool profiling)
    : device_(device), limits_(limits), profiling_(profiling), descriptors_(device) {
    if (profiling_ && !limits.timestamps) {
        throw Error("GPU timing was requested but the device's compute queue has no timestamp support");
    }
    const VkCommandPoolCreateInfo pool_info{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                            .queueFamilyIndex = device.queue_family()};
    check(vkCreateCommandPool(device.handle(), &pool_info, nullptr, &pool_), "vkCreateCommandPool");
    // Each list has its own fence, so that lists can be submitted from several threads.
    const VkFenceCreateInfo fence_info{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    const VkResult r = vkCreateFence(device.handle(), &fence_info, nullptr, &fence_);
    if (r != VK_SUCCESS) {
        vkDestroyCommandPool(device.handle(), pool_, nullptr);
        check(r, "vkCreateFence");
    }
}

CommandList::~CommandList() {
    // A submission of this list that timed out may still be running: the device defers this
    // then (runtime/deferred_release.hpp).
    device_.release(
        [dev = device_.handle(), query = query_pool_, total = total_pool_, pool = pool_, fence = fence_]() noexcept {
            if (query != VK_NULL_HANDLE)
                vkDestroyQueryPool(dev, query, nullptr);
            if (total != VK_NULL_HANDLE)
                vkDestroyQueryPool(dev, total, nullptr);
            vkDestroyFence(dev, fence, nullptr);
            vkDestroyCommandPool(dev, pool, nullptr);  // frees cmd_
        });
}

void CommandList::check_range(const BufferRange& r, std::string_view label, bool storage) const {
    const std::string who = "'" + std::string(label) + "': ";
    if (r.buffer == nullptr || !r.buffer->valid()) {
        throw Error(who + "binds no buffer");
    }
    const std::string what = who + "range [" + fmt::to_string(r.offset) + ", +" + fmt::to_string(r.size) +
                             ") of buffer '" + r.buffer->name() + "' (" + fmt::to_string(r.buffer->size()) + " bytes)";
    if (r.size == 0 || r.offset > r.buffer->size() || r.size > r.buffer->size() - r.offset) {
        throw Error(what + " is empty or outside the buffer");
    }
    if (storage && r.size > limits_.storage_buffer_range) {
        throw Error(what + " exceeds maxStorageBufferRange (" + fmt::to_string(limits_.storage_buffer_range) +
                    " bytes): bind the tensor in ranges no larger than that");
    }
    if (storage && r.offset % limits_.storage_offset_alignment != 0) {
        throw Error(what + " starts at an offset that is not a multiple of minStorageBufferOffsetAlignment (" +
                    fmt::to_string(limits_.storage_offset_alignment) + ")");
    }
}

void CommandList::dispatch(const Dispatch& d) {
    if (finished_) {
        throw Error("'" + std::string(d.label) + "': the command list is already finished");
    }
    if (d.pipeline == nullptr) {
        throw Error("'" + std::string(d.label) + "': dispatch without a pipeline");
    }
    const std::string who = "'" + std::string(d.label) + "' (" + d.pipeline->name() + "): ";
    if (d.push_constants.size() != d.pipeline->push_constant_size()) {
        throw Error(who + "push-constant block of " + fmt::to_string(d.push_constants.size()) +
                    " bytes; the pipeline takes " + fmt::to_string(d.pipeline->push_constant_size()));
    }
    if (d.bindings.size() != d.pipeline->binding_count()) {
        throw Error(who + fmt::to_string(d.bindings.size()) + " buffers bound; the pipeline takes " +
                    fmt::to_string(d.pipeline->binding_count()));
    }
    if (d.groups.x == 0 || d.groups.y == 0 || d.groups.z == 0) {
        throw Error(who + "dispatch of zero workgroups");
    }
    std::vector<ResolvedBinding> resolved;
    for (const Binding& b : d.bindings) {
        check_range(b.range, d.label, true);
        resolved.push_back({b.range.buffer->handle(), b.range.offset, b.range.size, b.access});
    }
    ops_.push_back(Op{.pipeline = d.pipeline,
                      .bindings = std::move(resolved),
                      .push = {d.push_constants.begin(), d.push_constants.end()},
                      .groups = d.groups,
                      .label = std::string(d.label)});
}

void CommandList::warm_up(const Pipeline& pipeline, const Buffer& buffer) {
    if (finished_) {
        throw Error("warm-up of " + pipeline.name() + ": the command list is already finished");
    }
    // Written, as far as the encoder knows: the shader may declare writes, and synchronization
    // validation counts declared accesses even over zero workgroups; barriers cost nothing here.
    ops_.push_back(Op{.pipeline = &pipeline,
                      .bindings = std::vector<ResolvedBinding>(pipeline.binding_count(),
                                                               {buffer.handle(), 0, buffer.size(), Access::ReadWrite}),
                      .push = std::vector<std::byte>(pipeline.push_constant_size()),
                      .groups = {0, 0, 0},
                      .label = "warm-up " + pipeline.name()});
}

void CommandList::copy(BufferRange src, BufferRange dst, std::string_view label) {
    if (finished_) {
        throw Error("'" + std::string(label) + "': the command list is already finished");
    }
    check_range(src, label, false);
    check_range(dst, label, false);
    if (src.size != dst.size) {
        throw Error("'" + std::string(label) + "': copy of " + fmt::to_string(src.size) + " bytes into a range of " +
                    fmt::to_string(dst.size));
    }
    ops_.push_back(Op{.bindings = {{src.buffer->handle(), src.offset, src.size, Access::Read},
                                   {dst.buffer->handle(), dst.offset, dst.size, Access::Write}},
                      .label = std::string(label)});
}

void CommandList::finish() {
    if (finished_) {
        return;
    }
    const VkCommandBufferAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                            .commandPool = pool_,
                                            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                            .commandBufferCount = 1};
    check(vkAllocateCommandBuffers(device_.handle(), &alloc, &cmd_), "vkAllocateCommandBuffers");
    const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    check(vkBeginCommandBuffer(cmd_, &begin), "vkBeginCommandBuffer");
    encode(cmd_);
    check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
    finished_ = true;
}

void CommandList::encode_into(VkCommandBuffer cmd) {
    if (cmd == VK_NULL_HANDLE) {
        throw Error("encode_into: the command buffer is VK_NULL_HANDLE");
    }
    encode(cmd);
    finished_ = true;
}

void CommandList::encode(VkCommandBuffer cmd) {
    if (encoded_) {
        throw Error("a command list is encoded once; submit it again instead of re-encoding");
    }
    encoded_ = true;
    const VkDevice dev = device_.handle();
    if (profiling_ && !ops_.empty()) {
        const VkQueryPoolCreateInfo qp{.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                       .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                       .queryCount = static_cast<std::uint32_t>(2 * ops_.size())};
        check(vkCreateQueryPool(dev, &qp, nullptr, &query_pool_), "vkCreateQueryPool");
        vkCmdResetQueryPool(cmd, query_pool_, 0, qp.queryCount);
    }

    if (total_timing_ && !profiling_) {
        const VkQueryPoolCreateInfo qp{
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
        check(vkCreateQueryPool(dev, &qp, nullptr, &total_pool_), "vkCreateQueryPool");
        vkCmdResetQueryPool(cmd, total_pool_, 0, 2);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, total_pool_, 0);
    }

    // Work of earlier submissions and host writes become visible to this list.
    memory_barrier(cmd, kWorkStages | VK_PIPELINE_STAGE_HOST_BIT, kWrites | VK_ACCESS_HOST_WRITE_BIT, kWorkStages,
                   kReadsAndWrites);

    struct Pending {
        VkBuffer buffer;
        VkDeviceSize begin, end;
        bool write;
    };
    std::vector<Pending> pending;  // accesses since the last barrier
    std::vector<VkDescriptorBufferInfo> infos;
    std::vector<VkWriteDescriptorSet> writes_ds;

    for (std::size_t i = 0; i < ops_.size(); ++i) {
        Op& op = ops_[i];
        bool hazard = false;
        for (const ResolvedBinding& b : op.bindings) {
            const VkDeviceSize begin = b.offset, end = b.offset + b.size;
            for (const Pending& p : pending) {
                if (p.buffer == b.buffer && begin < p.end && p.begin < end && (p.write || writes(b.access))) {
                    hazard = true;
                }
            }
        }
        if (hazard) {
            memory_barrier(cmd, kWorkStages, kWrites, kWorkStages, kReadsAndWrites);
            barriers_ += 1;
            pending.clear();
        }
        for (const ResolvedBinding& b : op.bindings) {
            pending.push_back({b.buffer, b.offset, b.offset + b.size, writes(b.access)});
        }

        if (query_pool_ != VK_NULL_HANDLE) {
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, query_pool_, static_cast<std::uint32_t>(2 * i));
        }
        if (op.pipeline == nullptr) {
            const VkBufferCopy region{
                .srcOffset = op.bindings[0].offset, .dstOffset = op.bindings[1].offset, .size = op.bindings[0].size};
            vkCmdCopyBuffer(cmd, op.bindings[0].buffer, op.bindings[1].buffer, 1, &region);
        } else {
            op.set = descriptors_.allocate(op.pipeline->set_layout(), op.pipeline->binding_count());
            infos.resize(op.bindings.size());
            writes_ds.resize(op.bindings.size());
            for (std::uint32_t b = 0; b < op.bindings.size(); ++b) {
                infos[b] = VkDescriptorBufferInfo{
                    .buffer = op.bindings[b].buffer, .offset = op.bindings[b].offset, .range = op.bindings[b].size};
                writes_ds[b] = VkWriteDescriptorSet{.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                                    .dstSet = op.set,
                                                    .dstBinding = b,
                                                    .descriptorCount = 1,
                                                    .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                    .pBufferInfo = &infos[b]};
            }
            vkUpdateDescriptorSets(dev, static_cast<std::uint32_t>(writes_ds.size()), writes_ds.data(), 0, nullptr);
            vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, op.pipeline->handle());
            vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, op.pipeline->layout(), 0, 1, &op.set, 0,
                                    nullptr);
            if (!op.push.empty()) {
                vkCmdPushConstants(cmd, op.pipeline->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                   static_cast<std::uint32_t>(op.push.size()), op.push.data());
            }
            if (op.groups.x == 0) {
                vkCmdDispatch(cmd, 0, 0, 0);  // a warm-up: dispatch() refuses zero groups
                dispatch_commands_ += 1;
            }
            // Group counts over the device limit are split; shaders see the global group id.
            const auto& max = limits_.workgroup_count;
            for (std::uint32_t z = 0; z < op.groups.z; z += max[2]) {
                for (std::uint32_t y = 0; y < op.groups.y; y += max[1]) {
                    for (std::uint32_t x = 0; x < op.groups.x; x += max[0]) {
                        vkCmdDispatchBase(cmd, x, y, z, std::min(max[0], op.groups.x - x),
                                          std::min(max[1], op.groups.y - y), std::min(max[2], op.groups.z - z));
                        dispatch_commands_ += 1;
                    }
                }
            }
        }
        if (query_pool_ != VK_NULL_HANDLE) {
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_,
                                static_cast<std::uint32_t>(2 * i + 1));
        }
    }
    // Results become visible to the host (downloads read mapped memory after the fence).
    memory_barrier(cmd, kWorkStages, kWrites, VK_PIPELINE_STAGE_HOST_BIT | kWorkStages,
                   VK_ACCESS_HOST_READ_BIT | kReadsAndWrites);
    if (total_pool_ != VK_NULL_HANDLE) {
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, total_pool_, 1);
    }
}

void CommandList::time_total() {
    if (encoded_) {
        throw Error("time_total() must be called before the command list is encoded");
    }
    if (!limits_.timestamps) {
        throw Error("GPU timing was requested but the device's compute queue has no timestamp support");
    }
    total_timing_ = true;
}

double CommandList::total_ms() const {
    if (query_pool_ != VK_NULL_HANDLE) {
        double ms = 0.0;
        for (const OpTiming& t : timings()) {
            ms += t.ms;
        }
        return ms;
    }
    if (total_pool_ == VK_NULL_HANDLE) {
        throw Error("total_ms() needs a command list with time_total() or profiling, encoded and submitted");
    }
    std::uint64_t ticks[2] = {};
    check(vkGetQueryPoolResults(device_.handle(), total_pool_, 0, 2, sizeof(ticks), ticks, sizeof(std::uint64_t),
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    const std::uint32_t bits = device_.info().timestamp_valid_bits;
    const std::uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
    const std::uint64_t delta = ((ticks[1] & mask) - (ticks[0] & mask)) & mask;
    return static_cast<double>(delta) * device_.info().timestamp_period_ns * 1e-6;
}

std::vector<OpTiming> CommandList::timings() const {
    if (query_pool_ == VK_NULL_HANDLE) {
        throw Error("timings() needs a command list created with profiling and submitted");
    }
    std::vector<std::uint64_t> ticks(2 * ops_.size());
    check(vkGetQueryPoolResults(device_.handle(), query_pool_, 0, static_cast<std::uint32_t>(ticks.size()),
                                ticks.size() * sizeof(std::uint64_t), ticks.data(), sizeof(std::uint64_t),
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    const std::uint32_t bits = device_.info().timestamp_valid_bits;
    const std::uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
    std::vector<OpTiming> out;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
        const std::uint64_t delta = ((ticks[2 * i + 1] & mask) - (ticks[2 * i] & mask)) & mask;
        out.push_back({ops_[i].label, static_cast<double>(delta) * device_.info().timestamp_period_ns * 1e-6});
    }
    return out;
}

}  // namespace vkf
