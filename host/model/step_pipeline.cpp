#include "host/model/step_pipeline.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <utility>

namespace vkf {

StepPipeline::StepPipeline(Batch& first, Transport& transport, std::uint32_t limit)
    : first_(first), transport_(transport), limit_(limit) {
    if (limit_ == 0) {
        throw Error("step pipeline: at least one step must be allowed in flight");
    }
}

StepResult StepPipeline::step() {
    if (started_.size() < limit_ && first_.has_pending()) {
        StepResult started = first_.step();
        if (started.ran.empty()) {
            if (started_.empty()) {
                return started;  // nothing runs: its blocked sequences are the caller's to free
            }
        } else {
            transport_.hand_off(started);
            started.hidden = {};
            stats_.steps += 1;
            stats_.overlapped += started_.empty() ? 0 : 1;
            started_.push_back(std::move(started));
            stats_.max_in_flight = std::max(stats_.max_in_flight, static_cast<std::uint32_t>(started_.size()));
            if (started_.size() < limit_ && first_.has_pending()) {
                return {};  // other sequences can run: the next step() starts theirs
            }
        }
    }
    if (started_.empty()) {
        return {};
    }
    return finish_oldest();
}

StepResult StepPipeline::finish_oldest() {
    if (started_.empty()) {
        throw Error("step pipeline: no step in flight to finish");
    }
    StepResult result = std::move(started_.front());
    started_.pop_front();
    transport_.receive_logits(result);
    std::vector<SequenceOutput> kept;
    for (SequenceOutput& out : result.ran) {
        // A sequence removed while its step was in flight: its logits are nobody's.
        if (first_.contains(out.id)) {
            kept.push_back(std::move(out));
        }
    }
    // Stage 0's blocked and deferred lists were true when the step started, not now.
    return StepResult{.ran = std::move(kept)};
}

}  // namespace vkf
