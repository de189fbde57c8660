#pragma once
// One sequence over any BatchFront (host/model/batch_front.hpp): the SequenceModel generate()
// runs, over a Batch on one device or over rank 0's front of a layer split over MPI ranks
// (host/dist/batch_pipeline.hpp), so that one protocol serves one sequence and many.
// forward() feeds the ids and steps the front until all of them have run, gathering the
// logits its outputs carry; a pipelined front may return nothing for a step while its steps
// are in flight, and a long prompt's chunks then overlap across the stages. Over a front
// whose Batch was made with session_batch_options() it gives exactly what a Session gives:
// the same steps over the same chunks, the same checks and errors.

#include "host/model/batch.hpp"
#include "host/model/sequence_model.hpp"
#include "host/model/session.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

class BatchSession : public SequenceModel {
public:
    // `front` must outlive the session and run no other sequence. `options`: the
    // SessionOptions its (first stage's) Batch was made with (session_batch_options).
    BatchSession(BatchFront& front, const ModelConfig& config, const SessionOptions& options);
    BatchSession(const BatchSession&) = delete;
    BatchSession& operator=(const BatchSession&) = delete;

    std::vector<float> forward(std::span<const std::uint32_t> ids, Logits which = Logits::Last,
                               const ChunkProgress& on_chunk = {}) override;
    std::uint32_t position() const override { return position_; }
    std::uint32_t max_tokens() const override { return options_.max_tokens; }
    std::uint32_t window() const override { return options_.window; }
    void reset() override;
    const std::vector<std::uint32_t>& chunk_ends() const override { return front_.chunk_ends(sequence_); }
    const ModelConfig& config() const override { return config_; }

private:
    BatchFront& front_;
    ModelConfig config_;
    SessionOptions options_;
    SequenceId sequence_ = 0;
    std::uint32_t position_ = 0;  // the sequence's tokens in the cache (its last output's)
};

}  // namespace vkf
