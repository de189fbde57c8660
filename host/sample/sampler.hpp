#pragma once
// Picking the next token from a row of logits: the sampler chain of
// host/sample/sampler_stages.hpp (logit_bias, penalties, top_k, typical_p, top_p, min_p,
// temperature, one seeded draw), or greedy argmax with temperature 0.
//
// The penalties see the last penalty_last_n tokens of the sequence: the prompt, given to
// accept() before the first sample(), and every token sample() picked since (as llama.cpp
// and Hugging Face's repetition penalty do; OpenAI's presence and frequency penalties are
// described over the text so far).
//
// Sampling is deterministic for a seed on every platform: the generator is splitmix64 and
// uniforms are its top 53 bits scaled to [0, 1), with no <random> distribution involved.
// Every sample() call that is not greedy consumes exactly one 64-bit output. With no bias and
// no penalty, greedy is the argmax of the raw logits, as before the chain existed.

#include "host/sample/sampling_params.hpp"

#include <cstdint>
#include <deque>
#include <span>

namespace vkf {

class Sampler {
public:
    explicit Sampler(SamplingParams params);  // validates

    const SamplingParams& params() const { return params_; }

    // Tokens of the sequence the penalties see (the prompt); only the last penalty_last_n
    // are kept.
    void accept(std::span<const std::uint32_t> tokens);

    // Picks the next token id from one row of logits (vocab entries) and accepts it. Throws
    // vkf::Error for an empty row, a logit_bias id outside it, and for a NaN or infinite
    // logit, naming the position of the first one (a GPU producing NaN must be reported, not
    // sampled).
    std::uint32_t sample(std::span<const float> logits);
    // The same among the tokens `allowed` marks non-zero (a grammar's mask, one entry per
    // logit): the others are dropped after logit_bias and the penalties, as if their logit were
    // -inf. Throws vkf::Error when the mask's size differs from the row's or it allows nothing.
    std::uint32_t sample(std::span<const float> logits, std::span<const std::uint8_t> allowed);

private:
    std::uint64_t next_u64();
    double next_uniform();  // [0, 1)
    std::uint32_t choose(std::span<const float> logits, std::span<const std::uint8_t> allowed);

    SamplingParams params_;
    std::uint64_t state_;
    bool penalties_;
    std::deque<std::uint32_t> recent_;
};

}  // namespace vkf
