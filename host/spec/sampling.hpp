#pragma once
// Picking the next token from a row of logits: greedy, or temperature sampling with
// optional top-k and top-p (nucleus) truncation.
//
// Order of operations, as in Hugging Face generate(): logits / temperature, then top-k
// (the k largest logits; ties broken towards the lower id), then top-p over the survivors
// sorted by probability (descending, ties towards the lower id): the smallest prefix whose
// probability mass reaches top_p is kept (at least one token). One uniform draw from the
// renormalized survivors picks the token.
//
// Sampling is deterministic for a seed on every platform: the generator is splitmix64 and
// uniforms are its top 53 bits scaled to [0, 1), with no <random> distribution involved.
// Every sample() call that is not greedy consumes exactly one 64-bit output.

#include <cstdint>
#include <span>

namespace vkf {

struct SamplingParams {
    float temperature = 0.0f;  // 0: greedy (argmax, lowest id on ties)
    std::uint32_t top_k = 0;   // 0: off
    float top_p = 1.0f;        // 1: off; nucleus over the top-k survivors, sorted by probability
    std::uint64_t seed = 0;
};

// Throws vkf::Error naming the bad field: temperature negative, NaN or infinite; top_p
// NaN or outside (0, 1].
void validate(const SamplingParams& params);

class Sampler {
public:
    explicit Sampler(SamplingParams params);  // validates

    const SamplingParams& params() const { return params_; }

    // Picks the next token id from one row of logits (vocab entries). Throws vkf::Error for
    // an empty row and for a NaN or infinite logit, naming the position of the first one (a
    // GPU producing NaN must be reported, not sampled).
    std::uint32_t sample(std::span<const float> logits);

private:
    std::uint64_t next_u64();
    double next_uniform();  // [0, 1)

    SamplingParams params_;
    std::uint64_t state_;
};

}  // namespace vkf
