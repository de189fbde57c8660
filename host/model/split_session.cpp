#include "host/model/split_session.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace vkf {

void check_stages(std::span<const Model* const> stages) {
    if (stages.empty()) {
        throw Error("split: no stages");
    }
    const ModelConfig& config = stages.front()->config();
    std::uint32_t next = 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
        const Model& m = *stages[i];
        if (!(m.config() == config)) {
            throw Error("split: stage " + fmt::to_string(i) + " is of another model configuration than stage 0");
        }
        if (m.layers().begin != next) {
            throw Error("split: stage " + fmt::to_string(i) + " holds " + describe(m.layers(), config) +
                        ", but the stages before end at layer " + fmt::to_string(next));
        }
        next = m.layers().end;
    }
    if (next != config.n_layer) {
        throw Error("split: the stages end at layer " + fmt::to_string(next) + " of " + fmt::to_string(config.n_layer) +
                    "; the last stage must hold the last layer and the head");
    }
}

SplitSession::SplitSession(std::span<const Model* const> stages, SessionOptions options) : options_(options) {
    check_stages(stages);
    const BatchOptions batch = session_batch_options(options);
    for (const Model* model : stages) {
        batches_.push_back(std::make_unique<Batch>(*model, batch));
    }
    reset();
}

PreparationStats SplitSession::prepare(std::uint32_t prompt_tokens) {
    // Later stages run the first stage's rows: its shapes (a Batch drops the logit rows of a
    // stage without the head).
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

std::uint32_t SplitSession::position() const {
    return batches_.front()->position(sequence_);
}

const std::vector<std::uint32_t>& SplitSession::chunk_ends() const {
    return batches_.back()->chunk_ends(sequence_);
}

const ModelConfig& SplitSession::config() const {
    return batches_.front()->model().config();
}

void SplitSession::reset() {
    // The same calls on every stage: they give out the same ids and blocks.
    SequenceId id = 0;
    for (std::size_t s = 0; s < batches_.size(); ++s) {
        if (sequence_ != 0) {
            batches_[s]->remove(sequence_);
        }
        const SequenceId added = batches_[s]->add();
        if (s > 0 && added != id) {
            throw Error("split session: stage " + fmt::to_string(s) + " gave the new sequence another id");
        }
        id = added;
    }
    sequence_ = id;
}

std::vector<float> SplitSession::forward(std::span<const std::uint32_t> ids, Logits which,
                                         const ChunkProgress& on_chunk) {
    const std::uint32_t vocab = config().vocab_size;
    if (ids.empty()) {
        throw Error("split session: forward needs at least one token id");
    }
    if (options_.window == 0 && ids.size() > options_.max_tokens - position()) {
        throw Error("split session: " + fmt::to_string(ids.size()) + " more tokens after " +
                    fmt::to_string(position()) + " exceed the KV cache's " + fmt::to_string(options_.max_tokens) +
                    " tokens");
    }
    // Batch::feed checks the ids; the first stage's refusal leaves the others unfed too.
    for (auto& batch : batches_) {
        batch->feed(sequence_, ids, which);
    }
    std::vector<float> logits;
    logits.reserve(which == Logits::All ? ids.size() * vocab : which == Logits::Last ? vocab : 0);
    Batch& first = *batches_.front();
    while (first.pending(sequence_) > 0) {
        const auto start = std::chrono::steady_clock::now();
        StepResult step = first.step();
        if (step.ran.empty()) {
            throw Error("split session: the step ran nothing with " + fmt::to_string(first.pending(sequence_)) +
                        " tokens pending");
        }
        for (std::size_t s = 1; s < batches_.size(); ++s) {
            std::vector<StageRows> schedule;
            for (const SequenceOutput& out : step.ran) {
                schedule.push_back(StageRows{.id = out.id, .rows = out.tokens});
            }
            ++split_stats_.hand_offs;
            split_stats_.transfer_bytes += step.hidden.size() * sizeof(float);
            StepResult next = batches_[s]->step(schedule, step.hidden);
            step = std::move(next);
        }
        split_stats_.stage_ms +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        split_stats_.transfer_ms = 0.0;
        for (const auto& batch : batches_) {
            split_stats_.transfer_ms += batch->stats().hand_off_ms;
        }
        const std::vector<float>& rows = step.ran.front().logits;
        logits.insert(logits.end(), rows.begin(), rows.end());
        if (on_chunk) {
            on_chunk(ids.size() - first.pending(sequence_), ids.size());
        }
    }
    return logits;
}

}  // namespace vkf
