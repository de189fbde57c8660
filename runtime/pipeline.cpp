#include "runtime/pipeline.hpp"

#include "base/error.hpp"
#include "runtime/spirv_loop_control.hpp"
#include "runtime/spirv_reflect.hpp"

#include <fmt/format.h>

#include <bit>
#include <chrono>

namespace vkf {

struct Pipeline::Pending {
    std::vector<VkSpecializationMapEntry> entries;
    std::vector<std::uint32_t> values;
    std::uint32_t required_subgroup_size = 0;
};

std::string PipelineDesc::key() const {
    std::string k(code != nullptr ? code->name : "?");
    k += "/wg" + fmt::to_string(workgroup_size[0]) + "x" + fmt::to_string(workgroup_size[1]) + "x" +
         fmt::to_string(workgroup_size[2]);
    for (const SpecConstant& c : constants) {
        k += "/" + fmt::to_string(c.id) + "=" + fmt::to_string(c.value);
    }
    if (required_subgroup_size != 0) {
        k += "/sg" + fmt::to_string(required_subgroup_size);
    }
    if (subgroup_size_checked) {
        k += "/sg-checked";
    }
    return k;
}

Pipeline::Pipeline(const Device& device, PipelineCache& cache, const ComputeLimits& limits, const PipelineDesc& desc,
                   PipelineCreation creation)
    : device_(device),
      cache_(cache),
      pending_(std::make_unique<Pending>()),
      push_constant_size_(desc.push_constant_layout.size),
      binding_count_(desc.binding_count) {
    if (desc.code == nullptr) {
        throw Error("pipeline without shader code");
    }
    name_ = desc.key();
    const std::string who = "pipeline " + name_ + ": ";

    // The C++ mirror of the shader's interface must agree with the shader itself.
    const ShaderInterface iface = reflect_shader(*desc.code);
    check_push_constants(iface, desc.push_constant_layout, who);
    for (std::uint32_t i = 0; i < iface.storage_bindings.size(); ++i) {
        if (iface.storage_bindings[i] != i) {
            throw Error(who + "storage-buffer bindings must be numbered 0..n-1 without gaps");
        }
    }
    if (iface.storage_bindings.size() != desc.binding_count) {
        throw Error(who + "the shader has " + fmt::to_string(iface.storage_bindings.size()) +
                    " storage buffers but the C++ side declares " + fmt::to_string(desc.binding_count));
    }
    if (push_constant_size_ > limits.push_constants) {
        throw Error(who + "needs " + fmt::to_string(push_constant_size_) +
                    " bytes of push constants; the device allows " + fmt::to_string(limits.push_constants));
    }
    if (desc.shared_memory_bytes > limits.shared_memory) {
        throw Error(who + "needs " + fmt::to_string(desc.shared_memory_bytes) +
                    " bytes of shared memory; the device (or a forced limit) allows " +
                    fmt::to_string(limits.shared_memory));
    }
    const std::uint64_t invocations =
        std::uint64_t{desc.workgroup_size[0]} * desc.workgroup_size[1] * desc.workgroup_size[2];
    for (int d = 0; d < 3; ++d) {
        if (desc.workgroup_size[d] == 0 || desc.workgroup_size[d] > limits.workgroup_size[d]) {
            throw Error(who + "workgroup size " + fmt::to_string(desc.workgroup_size[d]) + " in dimension " +
                        fmt::to_string(d) + " is outside the device limit " + fmt::to_string(limits.workgroup_size[d]));
        }
    }
    if (invocations > limits.workgroup_invocations) {
        throw Error(who + fmt::to_string(invocations) + " invocations per workgroup; the device allows " +
                    fmt::to_string(limits.workgroup_invocations));
    }
    // A kernel that uses subgroup operations assumes a subgroup size (its plan chose the
    // workgroup from it) and that every subgroup is full; neither holds unless required:
    // Intel's drivers, for one, may run fewer lanes than gl_SubgroupSize reports. Unless the
    // shader checks its subgroups itself (PipelineDesc::subgroup_size_checked).
    const std::uint32_t sg = desc.required_subgroup_size;
    if (iface.subgroup_operations && sg == 0 && !desc.subgroup_size_checked) {
        throw Error(who +
                    "uses subgroup operations but requires no subgroup size (PipelineDesc::required_subgroup_size); "
                    "without full subgroups of a known size a driver may run fewer lanes than gl_SubgroupSize");
    }
    const DeviceInfo& info = device.info();
    if (sg != 0) {
        if (!limits.subgroup_size_control || !device.enabled().subgroup_size_control ||
            !device.enabled().compute_full_subgroups) {
            throw Error(who + "requires full subgroups of " + fmt::to_string(sg) +
                        ", which this device cannot (it needs subgroupSizeControl and computeFullSubgroups for "
                        "compute shaders) or VKF_LIMITS no_subgroup_size_control forbids; plans take kernels "
                        "without subgroup operations there");
        }
        if (!std::has_single_bit(sg) || sg < info.min_subgroup_size || sg > info.max_subgroup_size) {
            throw Error(who + "subgroup size " + fmt::to_string(sg) + " cannot be required on this device (" +
                        fmt::to_string(info.min_subgroup_size) + " to " + fmt::to_string(info.max_subgroup_size) + ")");
        }
        // Full subgroups need a workgroup width that is a multiple of the subgroup size.
        if (desc.workgroup_size[0] % sg != 0) {
            throw Error(who + "requires full subgroups of " + fmt::to_string(sg) + " but its workgroup width " +
                        fmt::to_string(desc.workgroup_size[0]) + " is not a multiple of " + fmt::to_string(sg));
        }
        if (invocations > std::uint64_t{info.max_compute_workgroup_subgroups} * sg) {
            throw Error(who + fmt::to_string(invocations) + " invocations per workgroup are more than " +
                        fmt::to_string(info.max_compute_workgroup_subgroups) + " subgroups of " + fmt::to_string(sg) +
                        " (maxComputeWorkgroupSubgroups)");
        }
    }
    // Optional features, against the limits (which VKF_LIMITS may lower below the device's):
    // plans choose variants by the same flags, so this refuses only a plan that ignored them.
    const auto require = [&](bool used, bool allowed, const char* what) {
        if (used && !allowed) {
            throw Error(who + "uses " + what + ", which the device lacks or VKF_LIMITS forbids");
        }
    };
    require(iface.subgroup_arithmetic_or_shuffle, limits.subgroup_ops,
            "subgroup arithmetic or shuffles (no_subgroup_ops)");
    require(iface.int64, limits.int64, "64-bit integers (shaderInt64; no_int64)");
    require(iface.float16, limits.fp16_arithmetic, "fp16 arithmetic (shaderFloat16; no_fp16_arithmetic)");
    require(iface.storage_16bit, limits.fp16_storage, "16-bit storage (storageBuffer16BitAccess; no_fp16_storage)");
    require(iface.integer_dot_product, limits.integer_dot_product,
            "integer dot products (shaderIntegerDotProduct; no_integer_dot)");
    require(iface.cooperative_matrix, device.enabled().cooperative_matrix && !limits.coopmat_shapes.empty(),
            "cooperative matrices (VK_NV_cooperative_matrix with vulkanMemoryModel and shaderFloat16)");
    // After the shader's own requirements (subgroups, features), so that those are named first.
    check_storage_buffers(limits, desc.binding_count, "pipeline " + name_);

    const VkDevice dev = device.handle();
    std::vector<VkDescriptorSetLayoutBinding> bindings(desc.binding_count);
    for (std::uint32_t i = 0; i < desc.binding_count; ++i) {
        bindings[i] = VkDescriptorSetLayoutBinding{.binding = i,
                                                   .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                   .descriptorCount = 1,
                                                   .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    }
    const VkDescriptorSetLayoutCreateInfo set_info{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                                   .bindingCount = desc.binding_count,
                                                   .pBindings = bindings.data()};
    const VkPushConstantRange range{
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = push_constant_size_};
    try {
        check(vkCreateDescriptorSetLayout(dev, &set_info, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
        const VkPipelineLayoutCreateInfo layout_info{.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                                     .setLayoutCount = 1,
                                                     .pSetLayouts = &set_layout_,
                                                     .pushConstantRangeCount = push_constant_size_ ? 1u : 0u,
                                                     .pPushConstantRanges = &range};
        check(vkCreatePipelineLayout(dev, &layout_info, nullptr, &layout_), "vkCreatePipelineLayout");
        // Where the driver is slow to compile unrolled loops (quirk) or no_unroll forces it.
        const std::vector<std::uint32_t> rewritten =
            limits.loop_unrolling ? std::vector<std::uint32_t>{} : without_loop_unrolling(desc.code->words);
        const std::span<const std::uint32_t> words =
            limits.loop_unrolling ? desc.code->words : std::span<const std::uint32_t>(rewritten);
        const VkShaderModuleCreateInfo module_info{.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                                   .codeSize = words.size_bytes(),
                                                   .pCode = words.data()};
        check(vkCreateShaderModule(dev, &module_info, nullptr, &module_), "vkCreateShaderModule");

        std::vector<VkSpecializationMapEntry>& entries = pending_->entries;
        std::vector<std::uint32_t>& values = pending_->values;
        auto add = [&](std::uint32_t id, std::uint32_t value) {
            entries.push_back({.constantID = id, .offset = static_cast<std::uint32_t>(values.size() * 4), .size = 4});
            values.push_back(value);
        };
        for (std::uint32_t d = 0; d < 3; ++d) {
            add(d, desc.workgroup_size[d]);
        }
        for (const SpecConstant& c : desc.constants) {
            if (c.id < 3) {
                throw Error(who + "specialization constants 0-2 are the workgroup size");
            }
            add(c.id, c.value);
        }
        pending_->required_subgroup_size = sg;
        if (creation == PipelineCreation::Now) {
            create();
        }
    } catch (...) {
        destroy();
        throw;
    }
}

void Pipeline::create_pipeline() const {
    const Pending& p = *pending_;
    const VkSpecializationInfo spec{.mapEntryCount = static_cast<std::uint32_t>(p.entries.size()),
                                    .pMapEntries = p.entries.data(),
                                    .dataSize = p.values.size() * 4,
                                    .pData = p.values.data()};
    const std::uint32_t sg = p.required_subgroup_size;
    const VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup{
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = sg};
    // A required size comes with full subgroups (the constructor's checks): the kernels assume both.
    const VkPipelineShaderStageCreateFlags stage_flags =
        sg != 0 ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0;
    VkPipelineCreationFeedback feedback{};
    VkPipelineCreationFeedbackCreateInfo feedback_info{
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO, .pPipelineCreationFeedback = &feedback};
    const bool want_feedback = device_.enabled().pipeline_creation_feedback;
    const VkComputePipelineCreateInfo info{
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .pNext = want_feedback ? &feedback_info : nullptr,
        // Dispatches over the group-count limit are split with vkCmdDispatchBase.
        .flags = VK_PIPELINE_CREATE_DISPATCH_BASE_BIT,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .pNext = sg != 0 ? &subgroup : nullptr,
                  .flags = stage_flags,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module_,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = layout_,
    };
    const auto start = std::chrono::steady_clock::now();
    VkPipeline pipeline = VK_NULL_HANDLE;
    check(vkCreateComputePipelines(device_.handle(), cache_.handle(), 1, &info, nullptr, &pipeline),
          "vkCreateComputePipelines");
    const double create_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const bool reported = want_feedback && (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) != 0;
    const bool hit =
        reported && (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT) != 0;
    cache_.record_creation(hit, reported, create_ms);
    pipeline_ = pipeline;
    cache_hit_ = hit;
}

void Pipeline::create() const {
    std::unique_lock lock(state_mutex_);
    state_changed_.wait(lock, [this] { return state_ != State::Creating; });
    if (state_ == State::Created) {
        return;
    }
    if (state_ == State::Failed) {
        std::rethrow_exception(error_);
    }
    state_ = State::Creating;
    lock.unlock();
    // The driver's compile runs unlocked: other threads create other pipelines meanwhile.
    std::exception_ptr error;
    try {
        create_pipeline();
    } catch (...) {
        error = std::current_exception();
    }
    lock.lock();
    state_ = error ? State::Failed : State::Created;
    error_ = error;
    pending_.reset();
    state_changed_.notify_all();
    if (error) {
        std::rethrow_exception(error);
    }
}

VkPipeline Pipeline::handle() const {
    create();
    return pipeline_;
}

bool Pipeline::created() const {
    const std::lock_guard lock(state_mutex_);
    return state_ == State::Created;
}

bool Pipeline::cache_hit() const {
    const std::lock_guard lock(state_mutex_);
    return state_ == State::Created && cache_hit_;
}

Pipeline::~Pipeline() {
    {
        // A worker still creating it (a preparation's caller gave up on an error) finishes first.
        std::unique_lock lock(state_mutex_);
        state_changed_.wait(lock, [this] { return state_ != State::Creating; });
    }
    destroy();
}

void Pipeline::destroy() noexcept {
    const VkDevice dev = device_.handle();
    if (pipeline_ != VK_NULL_HANDLE)
        vkDestroyPipeline(dev, pipeline_, nullptr);
    if (module_ != VK_NULL_HANDLE)
        vkDestroyShaderModule(dev, module_, nullptr);
    if (layout_ != VK_NULL_HANDLE)
        vkDestroyPipelineLayout(dev, layout_, nullptr);
    if (set_layout_ != VK_NULL_HANDLE)
        vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
    pipeline_ = VK_NULL_HANDLE;
    module_ = VK_NULL_HANDLE;
    layout_ = VK_NULL_HANDLE;
    set_layout_ = VK_NULL_HANDLE;
}

}  // namespace vkf
