#pragma once
// One sequence through a language model, whatever runs it: a BatchSession, a view of one
// sequence of any BatchFront (host/model/batch_session.hpp), which a Session on one device
// is over a Batch of its own (host/model/session.hpp). forward() and reset() are what
// perplexity and the benchmarks need of it; generate() runs BatchGenerator over it.

#include "host/model/batch.hpp"
#include "host/spec/model_config.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace vkf {

// Called after each submission with how many of the ids have run (a long prompt's progress).
using ChunkProgress = std::function<void(std::size_t done, std::size_t total)>;

class SequenceModel {
public:
    virtual ~SequenceModel() = default;
    // Runs `ids` (appended to the sequence at position() onwards) and returns the fp32 logits
    // of the last one ([vocab]), of every one ([ids.size(), vocab]) or none (Session::forward
    // says the errors).
    virtual std::vector<float> forward(std::span<const std::uint32_t> ids, Logits which = Logits::Last,
                                       const ChunkProgress& on_chunk = {}) = 0;
    virtual std::uint32_t position() const = 0;    // tokens in the KV cache
    virtual std::uint32_t max_tokens() const = 0;  // KV-cache capacity (SessionOptions)
    virtual std::uint32_t window() const = 0;      // key window, 0: full attention
    virtual void reset() = 0;                      // a new, empty sequence
    // The key count after each submission since the last reset() (Session::chunk_ends).
    virtual const std::vector<std::uint32_t>& chunk_ends() const = 0;
    virtual const ModelConfig& config() const = 0;
};

}  // namespace vkf
