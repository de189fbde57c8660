#pragma once
// The BatchFront of every topology, made by one call (issue 41): one Batch on one device; a
// layer split over several devices of this process, each stage's Batch on its own Context,
// pipelined by a SplitBatch (host/model/split_batch.hpp); or, under mpirun, rank 0's first
// stage whose front the MPI transport supplies (host/dist/batch_pipeline.hpp's RankZeroBatch,
// passed in as `ranks` so that this library needs no MPI). BatchGenerator drives whichever it
// gets (host/model/batch_generation.hpp): one prompt, a prompt file and a server's requests
// run the same loop on every topology.

#include "host/model/batch.hpp"
#include "host/model/batch_front.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace vkf {

// Makes rank 0's front over its stage Batch (the other ranks mirror it).
using RankFrontMaker = std::function<std::unique_ptr<BatchFront>(Batch& first)>;

struct Topology {
    // This process's stage Models in layer order: the whole model, the stages of a --devices
    // split, or under mpirun rank 0's one stage. They must outlive the front.
    std::vector<const Model*> stages;
    // Under mpirun: the ranks' front over stages[0] (then `stages` holds one Model).
    RankFrontMaker ranks;
    std::uint32_t rank_count = 1;  // the ranks under mpirun
};

// The Batches of one topology and the front over them; owns both, the front destroyed first.
class StageFront {
public:
    StageFront(const StageFront&) = delete;
    StageFront& operator=(const StageFront&) = delete;
    ~StageFront();

    BatchFront& front() { return *front_; }
    const BatchFront& front() const { return *front_; }
    std::size_t local_stages() const { return batches_.size(); }
    Batch& stage(std::size_t i) { return *batches_.at(i); }
    const Batch& stage(std::size_t i) const { return *batches_.at(i); }
    // Records every local stage's steps for a sequence's prompt of `prompt_tokens` and its
    // decoding (Batch::prepare; later stages run stage 0's rows, so take its shapes); the
    // stages' figures summed, their threads the most any used.
    PreparationStats prepare(std::uint32_t prompt_tokens);

private:
    friend std::unique_ptr<StageFront> make_front(const Topology& topology, BatchOptions options);
    StageFront() = default;

    std::vector<std::unique_ptr<Batch>> batches_;
    std::unique_ptr<BatchFront> owned_;  // the split's front; null on one device
    BatchFront* front_ = nullptr;
};

// A step's sequences of a pipelined topology: `options.max_sequences` running sequences
// form groups of at most max_sequences / stages a step that follow each other down the
// stages, so that every stage has work (1 for one device: all of them).
BatchOptions stage_batch_options(BatchOptions options, std::uint32_t stages);

// The front of `topology`, every stage's Batch made with stage_batch_options(options, the
// topology's stage count). Throws vkf::Error for no stages, several stages under mpirun, or
// stages that do not form one model (check_stages).
std::unique_ptr<StageFront> make_front(const Topology& topology, BatchOptions options);

}  // namespace vkf
