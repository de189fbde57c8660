#pragma once
// Log-probabilities of generated tokens as OpenAI reports them: log_softmax of the model's
// raw logits (before bias, penalties, truncation or temperature: what the model thinks, not
// what the sampler drew from), in double.

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

struct TokenLogprob {
    std::uint32_t id = 0;
    double logprob = 0.0;
};

struct TokenLogprobs {
    TokenLogprob chosen;            // the token generated
    std::vector<TokenLogprob> top;  // the top_n most likely, descending (ties: lower id first)
};

// Throws vkf::Error for an empty row or `chosen` outside it.
TokenLogprobs token_logprobs(std::span<const float> logits, std::uint32_t chosen, std::uint32_t top_n);

}  // namespace vkf
