#pragma once
// Text generation over token ids: prefill the prompt, then decode one token per step
// through the KV cache, sampling each next token from the logits (host/spec/sampling.hpp).

#include "host/model/model.hpp"
#include "host/spec/sampling.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace vkf {

struct GenerationOptions {
    std::uint32_t n_predict = 32;
    SamplingParams sampling = {};
    bool keep_logits = false;  // keep the logits every token was sampled from
    // Called after each generated token (index, id), e.g. to stream it.
    std::function<void(std::uint32_t, std::uint32_t)> on_token = {};
};

struct GenerationResult {
    std::vector<std::uint32_t> tokens;  // the n_predict generated ids
    std::vector<float> logits;          // [n_predict, vocab] when keep_logits
    std::uint32_t prompt_tokens = 0;
    // Wall time of the prompt's forward pass and of the n_predict - 1 decode steps (the
    // last token is sampled but not fed back), including sampling and logit read-back.
    std::chrono::duration<double> prefill_time{};
    std::chrono::duration<double> decode_time{};
    double prefill_tokens_per_second() const;
    double decode_tokens_per_second() const;
};

// Runs the prompt through `session` (which must be empty and hold prompt + n_predict - 1
// tokens) and generates n_predict tokens. Throws vkf::Error for an empty prompt, a session
// too small, or logits that are not finite.
GenerationResult generate(Session& session, std::span<const std::uint32_t> prompt, const GenerationOptions& options);

}  // namespace vkf
