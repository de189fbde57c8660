#include "runtime/pipeline_preparation.hpp"

#include "base/error.hpp"
#include "runtime/context.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>

namespace vkf {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Large enough for any fixed-size block a shader declares in a storage buffer.
constexpr VkDeviceSize kWarmBufferBytes = 64 * 1024;

}  // namespace

std::size_t preparation_threads() {
    const char* text = std::getenv("VKF_PIPELINE_THREADS");
    if (text == nullptr || *text == '\0') {
        return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, PipelinePreparation::kMaxWorkers);
    }
    const std::string_view s(text);
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || n < 1 || n > 64) {
        throw Error("VKF_PIPELINE_THREADS='" + std::string(s) + "': give a whole number of threads from 1 to 64");
    }
    return n;
}

PipelinePreparation::PipelinePreparation(Context& ctx)
    : ctx_(ctx), start_(std::chrono::steady_clock::now()), max_workers_(preparation_threads()) {
    ctx_.begin_preparation(*this);
}

PipelinePreparation::~PipelinePreparation() {
    if (!finished_) {
        ctx_.end_preparation(*this);
        stop_workers();
    }
}

void PipelinePreparation::requested(const std::string& key) {
    const std::lock_guard lock(mutex_);
    keys_.insert(key);
}

void PipelinePreparation::queue(const Pipeline& pipeline) {
    const std::lock_guard lock(mutex_);
    queued_.push_back(&pipeline);
    // A worker per queued pipeline, up to one per core: none when everything exists already.
    if (workers_.size() < max_workers_ && workers_.size() < queued_.size() - next_) {
        workers_.emplace_back([this] { work(); });
    }
    wake_.notify_one();
}

void PipelinePreparation::work() {
    for (;;) {
        const Pipeline* pipeline = nullptr;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || next_ < queued_.size(); });
            if (next_ == queued_.size()) {
                return;
            }
            pipeline = queued_[next_++];
        }
        try {
            pipeline->create();
        } catch (...) {
            // Kept by the pipeline: finish() and every handle() rethrow it.
        }
    }
}

void PipelinePreparation::stop_workers() noexcept {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) {
        t.join();
    }
}

PreparationStats PipelinePreparation::finish() {
    if (finished_) {
        throw Error("PipelinePreparation::finish called twice");
    }
    finished_ = true;
    ctx_.end_preparation(*this);
    stop_workers();  // the workers take every queued pipeline before they stop
    PreparationStats stats{.pipelines = keys_.size(), .created = queued_.size(), .threads = workers_.size()};
    for (const Pipeline* p : queued_) {
        p->create();  // made already: returns at once, or throws its error
        stats.cache_hits += p->cache_hit() ? 1 : 0;
    }
    stats.hits_reported = ctx_.pipeline_cache_stats().hits_reported;
    stats.create_seconds = seconds_since(start_);
    if (!queued_.empty()) {
        const auto warm_start = std::chrono::steady_clock::now();
        const Buffer buffer =
            ctx_.create_buffer(std::min<VkDeviceSize>(kWarmBufferBytes, ctx_.limits().storage_buffer_range),
                               MemoryKind::Device, "pipeline warm-up");
        std::unique_ptr<CommandList> list = ctx_.command_list();
        for (const Pipeline* p : queued_) {
            list->warm_up(*p, buffer);
        }
        ctx_.submit(*list);
        stats.warm_seconds = seconds_since(warm_start);
    }
    stats.seconds = seconds_since(start_);
    return stats;
}

}  // namespace vkf
