#pragma once
// One sequence over any BatchFront (host/model/batch_front.hpp): a view of one sequence in a
// batch, over a Batch on one device (a Session is one over its own Batch), a split over this
// process's devices or rank 0's front of a split over MPI ranks (make_front,
// host/model/front_factory.hpp), so that one protocol serves one sequence and many.
// forward() feeds the ids and steps the front until all of them have run, gathering the
// logits its outputs carry (a pipelined front may return nothing for a step while its steps
// are in flight); generate() runs the sequence as one generation of a BatchGenerator. Over a
// front whose Batch was made with session_batch_options() both give what one device gives:
// the same steps over the same chunks, the same checks and errors.

#include "host/model/batch.hpp"
#include "host/model/generation.hpp"
#include "host/model/session_options.hpp"
#include "host/spec/model_config.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace vkf {

class BatchSession {
public:
    // `front` must outlive the session and run no other sequence. `options`: the
    // SessionOptions its (first stage's) Batch was made with (session_batch_options).
    BatchSession(BatchFront& front, const ModelConfig& config, const SessionOptions& options);
    BatchSession(const BatchSession&) = delete;
    BatchSession& operator=(const BatchSession&) = delete;

    using Logits = vkf::Logits;
    using ChunkProgress = vkf::ChunkProgress;

    // Runs `ids` (appended to the sequence at position() onwards) and returns the fp32 logits
    // of the last one ([vocab]), of every one ([ids.size(), vocab]) or none (the final norm
    // and the head skipped: benchmarks of the layers alone). Throws vkf::Error for an empty
    // input, ids >= vocab_size, or a sequence over max_tokens. `on_chunk`, when given, is
    // called after each submission with how many of the ids have run.
    std::vector<float> forward(std::span<const std::uint32_t> ids, Logits which = Logits::Last,
                               const ChunkProgress& on_chunk = {});
    // generate() (host/model/generation.hpp): the prompt continues the sequence.
    GenerationResult generate(std::span<const std::uint32_t> prompt, const GenerationOptions& options);
    std::uint32_t position() const { return position_; }              // tokens in the KV cache
    std::uint32_t max_tokens() const { return options_.max_tokens; }  // KV-cache capacity
    std::uint32_t window() const { return options_.window; }          // key window, 0: full attention
    void reset();                                                     // a new, empty sequence
    SequenceId sequence() const { return sequence_; }
    // The key count after each submission since the last reset(): where the chunks the
    // tokens ran in ended (a reference run in the same chunks, reference::Model::forward,
    // gives the same numerics even under Jais' length-dependent ALiBi scaling).
    const std::vector<std::uint32_t>& chunk_ends() const { return front_.chunk_ends(sequence_); }
    const ModelConfig& config() const { return config_; }

protected:
    // reset(), then `fill` gives the new sequence its tokens and returns how many (a saved
    // state restored). When it throws, the session is reset again (empty) and it rethrows.
    void refill(const std::function<std::uint32_t(SequenceId)>& fill);

private:
    BatchFront& front_;
    ModelConfig config_;
    SessionOptions options_;
    SequenceId sequence_ = 0;
    std::uint32_t position_ = 0;  // the sequence's tokens in the cache (its last output's)
};

}  // namespace vkf
