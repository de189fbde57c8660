#include "runtime/context.hpp"

#include "base/error.hpp"
#include "runtime/env_flag.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

namespace vkf {

namespace {

std::optional<std::string> env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

}  // namespace

Context::Context(ContextOptions options) : staging_size_(options.staging_size), force_staging_(options.force_staging) {
    if (staging_size_ < 64) {
        throw Error("ContextOptions::staging_size of " + fmt::to_string(staging_size_) +
                    " bytes: the staging buffer needs at least 64 (two halves)");
    }
    const bool validation =
        options.validation ? *options.validation : parse_env_flag(env("VKF_VALIDATION").value_or(""), "VKF_VALIDATION");
    if (options.external_instance != VK_NULL_HANDLE) {
        if (!options.external_device) {
            throw Error("an external VkInstance needs an external device too (ContextOptions::external_device)");
        }
        instance_ = std::make_unique<Instance>(options.external_instance, options.external_api_version,
                                               std::move(options.on_message));
        const ExternalDevice& ext = *options.external_device;
        DeviceInfo info = query_device_info(ext.physical_device, 0, options.external_api_version);
        device_ = std::make_unique<Device>(ext, std::move(info));
    } else {
        instance_ = std::make_unique<Instance>(
            InstanceOptions{.validation = validation, .on_message = std::move(options.on_message)});
        const auto devices = list_devices(*instance_);
        const std::string selector = options.device.value_or(env("VKF_DEVICE").value_or(""));
        const std::size_t chosen = select_device(devices, selector);
        device_ = std::make_unique<Device>(*instance_, instance_->physical_devices()[chosen], devices[chosen]);
    }

    overrides_ = LimitOverrides::parse(env("VKF_LIMITS").value_or("")).merged_with(options.limits);
    quirks_ = quirks_for(device_->info());
    limits_ = effective_limits(device_->info(), quirks_, overrides_);
    // Features the device exposes but the limits turned off stay off for kernels too.
    limits_.fp16_storage = limits_.fp16_storage && device_->enabled().storage_16bit;
    limits_.fp16_arithmetic = limits_.fp16_arithmetic && device_->enabled().float16_arithmetic;
    limits_.int64 = limits_.int64 && device_->enabled().int64;
    limits_.integer_dot_product = limits_.integer_dot_product && device_->enabled().integer_dot_product;
    limits_.subgroup_size_control = limits_.subgroup_size_control && device_->enabled().subgroup_size_control &&
                                    device_->enabled().compute_full_subgroups;

    // A CPU driver runs big dispatches for minutes where a GPU takes milliseconds.
    if (device_->info().type == DeviceType::Cpu) {
        timeout_ = std::chrono::milliseconds(600000);
    }
    if (options.timeout) {
        check_timeout(*options.timeout, "ContextOptions::timeout");
        timeout_ = *options.timeout;
    } else if (const auto t = env("VKF_TIMEOUT_MS")) {
        timeout_ = parse_timeout_ms(*t, "VKF_TIMEOUT_MS");
    }

    allocator_ = std::make_unique<MemoryAllocator>(
        *device_, options.memory_block_size,
        MemoryCaps{.device_local = overrides_.device_heap, .host_visible = overrides_.host_heap});
    cache_ = std::make_unique<PipelineCache>(*device_, *instance_,
                                             options.pipeline_cache_dir
                                                 ? std::optional<std::filesystem::path>(*options.pipeline_cache_dir)
                                                 : PipelineCache::default_directory());

    const VkDevice dev = device_->handle();
    const VkCommandPoolCreateInfo pool_info{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                            .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                            .queueFamilyIndex = device_->queue_family()};
    check(vkCreateCommandPool(dev, &pool_info, nullptr, &transfer_pool_), "vkCreateCommandPool");
    const VkCommandBufferAllocateInfo alloc{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                            .commandPool = transfer_pool_,
                                            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                            .commandBufferCount = 2};
    check(vkAllocateCommandBuffers(dev, &alloc, transfer_cmds_.data()), "vkAllocateCommandBuffers");
    const VkFenceCreateInfo fence_info{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    for (VkFence& f : transfer_fences_) {
        check(vkCreateFence(dev, &fence_info, nullptr, &f), "vkCreateFence");
    }
}

Context::~Context() {
    const VkDevice dev = device_->handle();
    // Waits for the device (after a timeout, for the work still running; a lost device
    // answers at once), then destroys what owners deferred meanwhile. A failure here leaves
    // nothing to do but release.
    device_->wait_idle_and_release();
    staging_ = Buffer{};
    pipelines_.clear();
    cache_.reset();
    allocator_.reset();
    for (VkFence f : transfer_fences_) {
        vkDestroyFence(dev, f, nullptr);
    }
    vkDestroyCommandPool(dev, transfer_pool_, nullptr);
}

Buffer Context::create_buffer(VkDeviceSize size, MemoryKind kind, std::string name) {
    return Buffer(*allocator_, size, kind, std::move(name));
}

const Pipeline& Context::pipeline(const PipelineDesc& desc) {
    const std::string key = desc.key();
    // Held while a pipeline is created now; a deferred one is created by a preparation's
    // workers, and the cache (internally synchronized) and its statistics lock themselves.
    const std::lock_guard lock(pipeline_mutex_);
    auto it = pipelines_.find(key);
    const bool fresh = it == pipelines_.end();
    if (fresh) {
        const PipelineCreation creation = preparations_.empty() ? PipelineCreation::Now : PipelineCreation::Deferred;
        it = pipelines_.emplace(key, std::make_unique<Pipeline>(*device_, *cache_, limits_, desc, creation)).first;
    }
    for (PipelinePreparation* p : preparations_) {
        p->requested(key);
    }
    if (fresh && !preparations_.empty()) {
        preparations_.back()->queue(*it->second);
    }
    return *it->second;
}

void Context::begin_preparation(PipelinePreparation& preparation) {
    const std::lock_guard lock(pipeline_mutex_);
    preparations_.push_back(&preparation);
}

void Context::end_preparation(PipelinePreparation& preparation) {
    const std::lock_guard lock(pipeline_mutex_);
    std::erase(preparations_, &preparation);
}

std::size_t Context::pipeline_count() const {
    const std::lock_guard lock(pipeline_mutex_);
    return pipelines_.size();
}

PipelineCacheStats Context::pipeline_cache_stats() const {
    return cache_->stats();
}

void Context::save_pipeline_cache() {
    const std::lock_guard lock(pipeline_mutex_);
    cache_->save();
}

std::unique_ptr<CommandList> Context::command_list(bool profiling) const {
    return std::make_unique<CommandList>(*device_, limits_, profiling);
}

void Context::inject_faults(const FaultInjection& faults) {
    allocator_->inject_faults(faults.allocations);
    const std::lock_guard lock(fault_mutex_);
    lose_device_after_waits_ = faults.lose_device_after_waits;
}

bool Context::injected_device_loss() {
    const std::lock_guard lock(fault_mutex_);
    if (!lose_device_after_waits_) {
        return false;
    }
    if (*lose_device_after_waits_ > 0) {
        --*lose_device_after_waits_;
        return false;
    }
    lose_device_after_waits_.reset();
    return true;
}

void Context::throw_if_lost() const {
    if (device_->lost()) {
        throw DeviceLostError(
            "the device timed out or was lost earlier; this context cannot submit work or transfer data");
    }
}

void Context::submit(VkCommandBuffer cmd, VkFence fence) {
    throw_if_lost();
    check(vkResetFences(device_->handle(), 1, &fence), "vkResetFences");
    const VkSubmitInfo submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    const std::lock_guard lock(queue_mutex_);
    const VkResult r = vkQueueSubmit(device_->queue(), 1, &submit, fence);
    if (r == VK_ERROR_DEVICE_LOST) {
        device_->mark_lost();  // the command buffer may be left pending
    }
    check(r, "vkQueueSubmit");
}

void Context::wait(VkFence fence, const char* what) {
    const VkResult r = injected_device_loss()
                           ? VK_ERROR_DEVICE_LOST
                           : vkWaitForFences(device_->handle(), 1, &fence, VK_TRUE, timeout_nanoseconds(timeout_));
    if (r != VK_SUCCESS) {
        // Timed out, lost, or the wait itself failed: the work may still be running, and what
        // it uses must outlive it (Device::release).
        device_->mark_lost();
    }
    if (r == VK_TIMEOUT) {
        throw DeviceLostError(std::string(what) + " did not finish within " + fmt::to_string(timeout_.count()) +
                              " ms: the GPU may be hung (raise VKF_TIMEOUT_MS for very long work)");
    }
    if (r == VK_ERROR_DEVICE_LOST) {
        throw DeviceLostError(std::string(what) +
                              ": vkWaitForFences failed: VK_ERROR_DEVICE_LOST; the GPU reset or the driver gave up "
                              "on this device");
    }
    check(r, "vkWaitForFences");
}

void Context::submit(CommandList& list) {
    list.finish();
    if (list.command_buffer() == VK_NULL_HANDLE) {
        throw Error("submit: the command list was encoded into an application's command buffer");
    }
    submit(list.command_buffer(), list.fence());
    wait(list.fence(), "GPU work");
}

void Context::transfer(const Buffer& buffer, VkDeviceSize offset, VkDeviceSize size, bool to_device, std::uint32_t slot,
                       bool wait_for_it) {
    // After a loss the command buffer may still be pending: not even reset it.
    throw_if_lost();
    const VkCommandBuffer cmd = transfer_cmds_[slot];
    const VkDeviceSize staged = slot * (staging_size_ / 2);  // the half's first byte
    check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    const VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                         .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    // Earlier GPU writes become visible to the copy; the copy's writes to later work.
    const VkMemoryBarrier before{
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(
        cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
        VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
    const VkBufferCopy region{
        .srcOffset = to_device ? staged : offset, .dstOffset = to_device ? offset : staged, .size = size};
    vkCmdCopyBuffer(cmd, to_device ? staging_.handle() : buffer.handle(),
                    to_device ? buffer.handle() : staging_.handle(), 1, &region);
    const VkMemoryBarrier after{
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, nullptr, 0,
                         nullptr);
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    submit(cmd, transfer_fences_[slot]);
    if (wait_for_it) {
        wait(transfer_fences_[slot], to_device ? "an upload" : "a download");
    }
}

void Context::upload(const Buffer& dst, std::span<const std::byte> bytes, VkDeviceSize offset) {
    if (offset > dst.size() || bytes.size() > dst.size() - offset) {
        throw Error("upload of " + fmt::to_string(bytes.size()) + " bytes at offset " + fmt::to_string(offset) +
                    " into buffer '" + dst.name() + "' of " + fmt::to_string(dst.size()) + " bytes");
    }
    // Work that timed out may still read the buffer or the staging buffer: leave both alone.
    throw_if_lost();
    if (std::byte* p = dst.mapped(); p != nullptr && !force_staging_) {
        std::memcpy(p + offset, bytes.data(), bytes.size());
        return;
    }
    const std::lock_guard lock(transfer_mutex_);
    if (!staging_.valid()) {
        staging_ = create_buffer(staging_size_, MemoryKind::Host, "staging");
    }
    // Double-buffered: the host fills one half of the staging buffer while the copy of the
    // other half runs (large uploads, the weights, move at the slower of the two rates, not
    // their sum). Every copy has finished when upload returns.
    const VkDeviceSize half = staging_size_ / 2;
    bool pending[2] = {false, false};
    std::uint32_t slot = 0;
    for (VkDeviceSize done = 0; done < bytes.size(); done += half, slot ^= 1u) {
        if (pending[slot]) {
            wait(transfer_fences_[slot], "an upload");
        }
        const VkDeviceSize n = std::min<VkDeviceSize>(half, bytes.size() - done);
        std::memcpy(staging_.mapped() + slot * half, bytes.data() + done, n);
        transfer(dst, offset + done, n, true, slot, false);
        pending[slot] = true;
    }
    for (std::uint32_t s = 0; s < 2; ++s) {
        if (pending[s]) {
            wait(transfer_fences_[s], "an upload");
        }
    }
}

void Context::download(const Buffer& src, std::span<std::byte> bytes, VkDeviceSize offset) {
    if (offset > src.size() || bytes.size() > src.size() - offset) {
        throw Error("download of " + fmt::to_string(bytes.size()) + " bytes at offset " + fmt::to_string(offset) +
                    " from buffer '" + src.name() + "' of " + fmt::to_string(src.size()) + " bytes");
    }
    // Work that timed out may still write the buffer or read the staging buffer.
    throw_if_lost();
    if (const std::byte* p = src.mapped(); p != nullptr && !force_staging_) {
        std::memcpy(bytes.data(), p + offset, bytes.size());
        return;
    }
    const std::lock_guard lock(transfer_mutex_);
    if (!staging_.valid()) {
        staging_ = create_buffer(staging_size_, MemoryKind::Host, "staging");
    }
    for (VkDeviceSize done = 0; done < bytes.size(); done += staging_size_) {
        const VkDeviceSize n = std::min<VkDeviceSize>(staging_size_, bytes.size() - done);
        transfer(src, offset + done, n, false, 0, true);
        std::memcpy(bytes.data() + done, staging_.mapped(), n);
    }
}

Context& default_context() {
    static std::unique_ptr<Context> context = std::make_unique<Context>();
    return *context;
}

}  // namespace vkf
