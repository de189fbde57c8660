#include "host/model/front_factory.hpp"

#include "base/error.hpp"
#include "host/model/split_batch.hpp"
#include "host/model/split_model.hpp"

#include <algorithm>

namespace vkf {

StageFront::~StageFront() {
    owned_.reset();  // a SplitBatch's workers joined before the Batches they drive go
}

PreparationStats StageFront::prepare(std::uint32_t prompt_tokens) {
    const std::vector<StepShape> shapes = batches_.front()->sequence_shapes(prompt_tokens);
    PreparationStats total{.hits_reported = true};
    for (auto& batch : batches_) {
        const PreparationStats s = batch->prepare(shapes);
        total.pipelines += s.pipelines;
        total.created += s.created;
        total.cache_hits += s.cache_hits;
        total.hits_reported = total.hits_reported && s.hits_reported;
        total.threads = std::max(total.threads, s.threads);
        total.create_seconds += s.create_seconds;
        total.warm_seconds += s.warm_seconds;
        total.seconds += s.seconds;
    }
    return total;
}

BatchOptions stage_batch_options(BatchOptions options, std::uint32_t stages) {
    stages = std::max<std::uint32_t>(stages, 1);
    options.max_sequences = (options.max_sequences + stages - 1) / stages;
    return options;
}

std::unique_ptr<StageFront> make_front(const Topology& topology, BatchOptions options) {
    if (topology.stages.empty()) {
        throw Error("front: no stages to run");
    }
    if (topology.ranks && topology.stages.size() != 1) {
        throw Error("front: under mpirun this process runs one stage, not several");
    }
    if (!topology.ranks) {
        check_stages(topology.stages);
    }
    const auto stages = topology.ranks ? topology.rank_count : static_cast<std::uint32_t>(topology.stages.size());
    options = stage_batch_options(options, stages);
    std::unique_ptr<StageFront> made(new StageFront);
    for (const Model* model : topology.stages) {
        made->batches_.push_back(std::make_unique<Batch>(*model, options));
    }
    if (topology.ranks) {
        made->owned_ = topology.ranks(*made->batches_.front());
    } else if (made->batches_.size() > 1) {
        std::vector<Batch*> pointers;
        for (auto& batch : made->batches_) {
            pointers.push_back(batch.get());
        }
        made->owned_ = std::make_unique<SplitBatch>(pointers);
    }
    made->front_ = made->owned_ ? made->owned_.get() : made->batches_.front().get();
    return made;
}

}  // namespace vkf
