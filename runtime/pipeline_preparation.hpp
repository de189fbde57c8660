#pragma once
// Creating the pipelines some work needs before it runs, so that its first submission (a
// model's first token) does not wait for the driver's compiler. While a PipelinePreparation
// is alive, Context::pipeline() hands out deferred pipelines (runtime/pipeline.hpp) and
// queues their vkCreateComputePipelines on the preparation's worker threads, one per core up
// to kMaxWorkers
// (VKF_PIPELINE_THREADS): recording a model's steps then compiles their pipelines in parallel, from
// the on-disk pipeline cache where it has them. finish() waits for them all, then runs each
// new pipeline once over zero workgroups: drivers that compile at the first dispatch
// (lavapipe: llvmpipe makes its LLVM code then) compile there, not in the first token's
// submission. docs/DESIGN.md "Recorded steps".

#include "runtime/pipeline.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace vkf {

class Context;

struct PreparationStats {
    std::size_t pipelines = 0;    // distinct pipelines the work asked for
    std::size_t created = 0;      // of them, made by this preparation (the others existed already)
    std::size_t cache_hits = 0;   // of the made ones, found in the pipeline cache by the driver
    bool hits_reported = false;   // the driver reports cache hits (VK_EXT_pipeline_creation_feedback)
    std::size_t threads = 0;      // worker threads used
    double create_seconds = 0.0;  // from the start to the last pipeline made
    double warm_seconds = 0.0;    // the zero-workgroup submission
    double seconds = 0.0;         // from the start to the end of finish()
};

// Worker threads: VKF_PIPELINE_THREADS (1 to 64), else one per core up to kMaxWorkers.
std::size_t preparation_threads();

class PipelinePreparation {
public:
    static constexpr std::size_t kMaxWorkers = 8;

    // Context::pipeline() defers creation from here until finish() or destruction. Any thread
    // may record work meanwhile; the pipelines it asks for count for this preparation.
    explicit PipelinePreparation(Context& ctx);
    // Without finish(): waits for the workers; errors are left to the pipelines' handle().
    ~PipelinePreparation();
    PipelinePreparation(const PipelinePreparation&) = delete;
    PipelinePreparation& operator=(const PipelinePreparation&) = delete;

    // Waits for every queued pipeline (throws the first creation's vkf::Error) and submits
    // the zero-workgroup dispatches of the new ones.
    PreparationStats finish();

    // Context::pipeline()'s side, under its pipeline lock.
    void requested(const std::string& key);
    void queue(const Pipeline& pipeline);

private:
    void work();
    void stop_workers() noexcept;

    Context& ctx_;
    std::chrono::steady_clock::time_point start_;
    std::size_t max_workers_;
    std::mutex mutex_;  // everything below
    std::condition_variable wake_;
    std::set<std::string> keys_;
    std::vector<const Pipeline*> queued_;
    std::size_t next_ = 0;  // queued_[next_] is the next a worker takes
    bool stopping_ = false;
    bool finished_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace vkf
