#pragma once
// One sequence through a model split by layers over several stages in this process
// (issue 31): every stage is a Model of a LayerRange on its own Context (a device, or the
// same device again), with its own Batch and KV cache for its layers. forward() runs each
// step on the first stage (embedding and its layers), downloads the step's hidden rows to
// host memory and uploads them to the next stage, and so on; the last stage's head gives the
// logits. The numerics are those of one device: every stage runs the same chunks.

#include "host/model/batch.hpp"
#include "host/model/sequence_model.hpp"
#include "host/model/session.hpp"

#include <memory>
#include <span>
#include <vector>

namespace vkf {

// What moving activations between stages cost (vkf-run --json's "split" object, vkf-bench).
struct SplitStats {
    std::uint64_t hand_offs = 0;       // hidden rows passed from a stage to the next, per step
    std::uint64_t transfer_bytes = 0;  // fp32 bytes of them
    // Wall time of the hand-offs' host copies: every non-last stage's download of its hidden
    // rows and every later stage's upload of them (SessionStats::hand_off_ms, summed).
    double transfer_ms = 0.0;
    double stage_ms = 0.0;  // wall time of the stages' steps, hand-offs included
};

// Throws vkf::Error unless `stages` are of one configuration, their layers contiguous from
// layer 0 to the last (the first holding the embedding, the last the head).
void check_stages(std::span<const Model* const> stages);

class SplitSession : public SequenceModel {
public:
    // `stages` in layer order; they must outlive the session. `options` as for a Session,
    // the same for every stage.
    SplitSession(std::span<const Model* const> stages, SessionOptions options);
    SplitSession(const SplitSession&) = delete;
    SplitSession& operator=(const SplitSession&) = delete;

    std::vector<float> forward(std::span<const std::uint32_t> ids, Logits which = Logits::Last,
                               const ChunkProgress& on_chunk = {}) override;
    std::uint32_t position() const override;
    std::uint32_t max_tokens() const override { return options_.max_tokens; }
    std::uint32_t window() const override { return options_.window; }
    void reset() override;
    const std::vector<std::uint32_t>& chunk_ends() const override;
    const ModelConfig& config() const override;

    // Session::prepare on every stage: the shapes the first stage will schedule for this
    // prompt and the decoding after it. The stats add up the stages' (threads: the most).
    PreparationStats prepare(std::uint32_t prompt_tokens);

    std::size_t stage_count() const { return batches_.size(); }
    const Batch& stage(std::size_t i) const { return *batches_.at(i); }
    const SplitStats& split_stats() const { return split_stats_; }

private:
    SessionOptions options_;
    std::vector<std::unique_ptr<Batch>> batches_;
    SequenceId sequence_ = 0;
    SplitStats split_stats_;
};

}  // namespace vkf
