#pragma once
// A compute pipeline from embedded SPIR-V: specialization constants carry compile-time
// choices (workgroup and tile sizes), a push-constant range carries run-time values, and
// set 0 holds its storage buffers. The C++ side (push-constant members, binding count) is
// checked against the shader, and the pipeline against the device's limits, when it is created.

#include "runtime/limits.hpp"
#include "runtime/pipeline_cache.hpp"
#include "runtime/push_constants.hpp"
#include "runtime/spirv.hpp"

#include <array>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vkf {

struct SpecConstant {
    std::uint32_t id;
    std::uint32_t value;  // floats through std::bit_cast
};

// Shaders take their workgroup size from specialization constants 0, 1 and 2
// (layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;).
struct PipelineDesc {
    const SpirvCode* code = nullptr;
    std::array<std::uint32_t, 3> workgroup_size{64, 1, 1};
    std::vector<SpecConstant> constants;      // ids 3 and up
    PushConstantLayout push_constant_layout;  // the C++ mirror's, e.g. MatmulPush::layout
    std::uint32_t binding_count = 0;          // storage buffers at bindings 0..n-1
    std::uint32_t shared_memory_bytes = 0;    // what the chosen tile sizes need
    // Subgroups of exactly this size, all full (the workgroup width must be a multiple of it);
    // required of every shader that uses subgroup operations. 0: the driver's choice, for
    // shaders without them.
    std::uint32_t required_subgroup_size = 0;
    // Instead of a required size: the shader checks at run time that its subgroups suit it and
    // has a path without subgroup operations where they do not (attention SUBGROUP_ANY_SIZE),
    // so that it may use them at whatever size the driver runs.
    bool subgroup_size_checked = false;

    std::string key() const;  // identifies the pipeline: shader and every constant
};

// Now: the constructor creates the VkPipeline. Deferred: the constructor checks the desc and
// makes the layouts and the shader module (cheap), and the VkPipeline (the driver's compile)
// is made by create(), on whichever thread calls it first: a preparation's workers
// (runtime/pipeline_preparation.hpp) make many at once, since vkCreateComputePipelines may be
// called from several threads with one VkPipelineCache (the cache is internally synchronized
// unless created EXTERNALLY_SYNCHRONIZED, which vkformer's is not).
enum class PipelineCreation { Now, Deferred };

class Pipeline {
public:
    Pipeline(const Device& device, PipelineCache& cache, const ComputeLimits& limits, const PipelineDesc& desc,
             PipelineCreation creation = PipelineCreation::Now);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    // Creates a deferred pipeline first (or waits for the thread creating it); throws the
    // creation's vkf::Error, every time, when it failed.
    VkPipeline handle() const;
    void create() const;
    bool created() const;
    // The driver found it in the pipeline cache (VK_EXT_pipeline_creation_feedback), once created.
    bool cache_hit() const;
    VkPipelineLayout layout() const { return layout_; }
    VkDescriptorSetLayout set_layout() const { return set_layout_; }
    std::uint32_t push_constant_size() const { return push_constant_size_; }
    std::uint32_t binding_count() const { return binding_count_; }
    const std::string& name() const { return name_; }

private:
    struct Pending;  // what a deferred vkCreateComputePipelines needs
    enum class State { Pending, Creating, Created, Failed };
    void create_pipeline() const;
    void destroy() noexcept;

    const Device& device_;
    PipelineCache& cache_;
    mutable std::unique_ptr<Pending> pending_;
    mutable std::mutex state_mutex_;
    mutable std::condition_variable state_changed_;
    mutable State state_ = State::Pending;
    mutable std::exception_ptr error_;
    mutable bool cache_hit_ = false;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    mutable VkPipeline pipeline_ = VK_NULL_HANDLE;
    VkShaderModule module_ = VK_NULL_HANDLE;
    std::uint32_t push_constant_size_ = 0;
    std::uint32_t binding_count_ = 0;
    std::string name_;
};

}  // namespace vkf
