#pragma once
// What a caller asks of the sampler (host/sample/sampler.hpp): every field's neutral value
// turns its stage off, so SamplingParams{} is greedy decoding over the raw logits.

#include <cstdint>
#include <vector>

namespace vkf {

// Added to one token's logit before anything else (OpenAI's logit_bias: -100 bans a token,
// +100 all but forces it).
struct LogitBias {
    std::uint32_t id = 0;
    float bias = 0.0f;
};

struct SamplingParams {
    float temperature = 0.0f;  // 0: greedy (argmax after bias and penalties, lowest id on ties)
    std::uint32_t top_k = 0;   // 0: off
    float top_p = 1.0f;        // 1: off
    std::uint64_t seed = 0;
    float min_p = 0.0f;                 // 0: off; keeps p >= min_p * p_max
    float typical_p = 1.0f;             // 1: off; locally typical sampling (Meister et al., 2022)
    float repetition_penalty = 1.0f;    // 1: off; > 1 discourages tokens seen in the window
    float presence_penalty = 0.0f;      // subtracted once from a token seen in the window
    float frequency_penalty = 0.0f;     // subtracted per occurrence in the window
    std::uint32_t penalty_last_n = 64;  // the window: the last N tokens, prompt included; 0: none
    std::vector<LogitBias> logit_bias;
};

// Throws vkf::Error naming the bad field: temperature negative, NaN or infinite; top_p or
// typical_p NaN or outside (0, 1]; min_p outside [0, 1]; repetition_penalty not finite and
// > 0; presence/frequency penalties or a bias not finite. Bias ids are checked against the
// vocabulary when the logits arrive (Sampler::sample), or by check_bias_ids.
void validate(const SamplingParams& params);
// Throws vkf::Error naming the first logit_bias entry whose id is not below vocab_size.
void check_bias_ids(const SamplingParams& params, std::uint64_t vocab_size);

// Whether the penalties stage changes anything.
bool has_penalties(const SamplingParams& params);

}  // namespace vkf
