#pragma once
// Many generations at once over a Batch (continuous batching): each request has its own
// prompt, sampling settings and stop conditions (GenerationOptions), joins whenever it is
// submitted and leaves when it stops, and every step() decodes one token for each running
// generation (and runs prompt chunks of the new ones) in one forward pass.

#include "host/model/batch.hpp"
#include "host/model/generation.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace vkf {

class BatchGenerator {
public:
    explicit BatchGenerator(BatchFront& batch) : batch_(batch) {}
    BatchGenerator(const BatchGenerator&) = delete;
    BatchGenerator& operator=(const BatchGenerator&) = delete;
    ~BatchGenerator();

    // Starts a generation. Throws vkf::Error for an empty prompt, n_predict 0, bad sampling
    // parameters, or prompt + n_predict - 1 tokens over the batch's max_sequence_tokens.
    SequenceId submit(std::span<const std::uint32_t> prompt, GenerationOptions options);
    // Continues `id`, a sequence the caller added to the front and owns (its earlier tokens
    // in the cache: a session's turns), with `prompt`: as submit(), but the generation ends
    // at a full cache (GenerationOptions::end_when_full) and the sequence stays in the front
    // when it ends, without the last token sampled (the caller puts it first in the next
    // prompt). Throws vkf::Error as submit() does, the sequence then unchanged.
    void resume(SequenceId id, std::span<const std::uint32_t> prompt, GenerationOptions options);
    // Ends a generation now (StopReason::Caller); its result is returned by the next step().
    void cancel(SequenceId id);
    // One forward step; returns the generations that ended in it (or were cancelled before).
    std::vector<std::pair<SequenceId, GenerationResult>> step();
    bool busy() const { return !running_.empty() || !ended_.empty(); }
    std::size_t running() const { return running_.size(); }
    // Steps until every generation has ended.
    std::map<SequenceId, GenerationResult> run();

private:
    using clock = std::chrono::steady_clock;
    struct Running {
        GenerationOptions options;
        Sampler sampler;
        GenerationResult result;
        clock::time_point start, first_token;
        std::uint32_t prefilled = 0;                         // prompt tokens run (GenerationOptions::on_prefill)
        bool owned = true;                                   // removed from the front when it ends (not resume()'s)
        std::vector<std::uint32_t> prompt;                   // kept for prompt_logprobs
        std::optional<grammar::TokenConstraint> constraint;  // GenerationOptions::grammar's walk
    };
    // The checks of submit() and resume(), before the front is touched; the sampler.
    Sampler check(std::span<const std::uint32_t> prompt, const GenerationOptions& options) const;
    void start(SequenceId id, std::span<const std::uint32_t> prompt, GenerationOptions options, const Sampler& sampler,
               bool owned);
    void record_prompt_logprobs(Running& r, const SequenceOutput& out);
    void finish(SequenceId id, StopReason why);
    // The grammar's mask for `r`'s next token (empty without one); nullopt when it ended `id`.
    std::optional<std::vector<std::uint8_t>> grammar_mask(SequenceId id, Running& r, std::size_t vocab);

    BatchFront& batch_;
    std::map<SequenceId, Running> running_;
    std::vector<std::pair<SequenceId, GenerationResult>> ended_;
};

}  // namespace vkf
