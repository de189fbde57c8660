#pragma once
// One sequence through a language model, whatever runs it: a Session on one device
// (host/model/session.hpp), a SplitSession over the stages of a layer split on several
// devices of this process (host/model/split_session.hpp), or a BatchSession over any
// BatchFront (host/model/batch_session.hpp), e.g. rank 0's front of a split over MPI ranks
// (host/dist). generate() (host/model/generation.hpp) runs over this interface.

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
