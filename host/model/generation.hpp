#pragma once
// Text generation over token ids: prefill the prompt, then decode one token per step
// through the KV cache, sampling each next token from the logits (host/sample/sampler.hpp).

#include "host/grammar/token_constraint.hpp"
#include "host/sample/logprobs.hpp"
#include "host/sample/sampler.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

// Called after each submission with how many of the ids have run (a long prompt's progress).
using ChunkProgress = std::function<void(std::size_t done, std::size_t total)>;

struct GenerationOptions {
    std::uint32_t n_predict = 32;
    SamplingParams sampling = {};
    bool keep_logits = false;  // keep the logits every token was sampled from
    // Generation ends once one of these is sampled (the end-of-sequence ids); it is kept in
    // the result's tokens, as Hugging Face's generate() keeps it.
    std::vector<std::uint32_t> stop_ids = {};
    // Tokens of the sequence before the prompt that the penalties see as part of it (a
    // prefix restored from a saved state, not run again): sampling is then as if it had been.
    std::vector<std::uint32_t> penalty_context = {};
    // Called after each generated token (index, id), e.g. to stream it; returning false ends
    // generation after this token (a stop string the caller found in the text).
    std::function<bool(std::uint32_t, std::uint32_t)> on_token = {};
    // Called during the prompt's forward pass after each chunk (tokens run, prompt tokens):
    // a progress line for a prompt that takes a while.
    ChunkProgress on_prefill = {};
    // BatchGenerator: a prompt and n_predict tokens over the sequence's cache are refused
    // at submit; with this, only a prompt over it is, and (without a key window) generation
    // ends with StopReason::CacheFull once the cache is full, as generate() ends it.
    bool end_when_full = false;
    // Set (BatchGenerator): each token's log-probability and the N most likely tokens'
    // (host/sample/logprobs.hpp), kept in the result and given to on_logprobs (index, them)
    // before on_token.
    std::optional<std::uint32_t> logprobs = {};
    // BatchGenerator, with logprobs: also each prompt token's logprob after the first (the
    // prompt runs with every row's logits; it shares no prefix with another sequence).
    bool prompt_logprobs = false;
    std::function<void(std::uint32_t, const TokenLogprobs&)> on_logprobs = {};
    // BatchGenerator::submit: the sequence's cache salt (BatchFront::add): its prompt takes
    // cached or live blocks only of sequences with the same salt (a tenant's).
    std::uint64_t cache_salt = 0;
    // Set (BatchGenerator): the text must follow this grammar. Before each sample the tokens
    // whose piece it does not allow are dropped (after logit_bias and the penalties), the
    // stop_ids allowed only where the text is complete; a complete text that nothing more can
    // continue ends as StopToken without another token. Logprobs stay the model's own. The
    // matcher's bounds passed (an ambiguous grammar) or a text no token can continue end the
    // generation with StopReason::Error.
    std::shared_ptr<const grammar::Constraint> grammar = {};
};

// CacheFull: the KV cache has no room for the next token: a sequence without a key window
// at its cache's end (GenerationOptions::end_when_full, generate), or the batch's KV blocks ran out with every
// generation waiting for one; the youngest ended with the tokens it had (BatchGenerator).
// Error: the generation could not go on (GenerationResult::error says why; a grammar's).
enum class StopReason { Length, StopToken, Caller, CacheFull, Error };

struct GenerationResult {
    std::vector<std::uint32_t> tokens;           // the generated ids: n_predict, or fewer when stopped
    std::vector<float> logits;                   // [tokens.size(), vocab] when keep_logits
    std::vector<TokenLogprobs> logprobs;         // one per token when GenerationOptions::logprobs
    std::vector<TokenLogprobs> prompt_logprobs;  // prompt tokens 1.. with prompt_logprobs
    std::uint32_t prompt_tokens = 0;
    // BatchGenerator::submit: of them, those whose blocks came from the prefix cache or
    // another sequence (not run again: OpenAI's usage.prompt_tokens_details.cached_tokens).
    std::uint32_t cached_tokens = 0;
    // Session::chunk_ends() after generation: the chunks prompt and tokens ran in.
    std::vector<std::uint32_t> chunk_ends;
    // The sequence's tokens in the cache when it ended (the last token sampled not among them).
    std::uint32_t position = 0;
    StopReason stop = StopReason::Length;
    std::string error;  // StopReason::Error: what went wrong
    // Wall time of the prompt's forward pass and of the decode steps (the last token is
    // sampled but not fed back), including sampling and logit read-back.
    std::chrono::duration<double> prefill_time{};
    std::chrono::duration<double> decode_time{};
    double prefill_tokens_per_second() const;
    double decode_tokens_per_second() const;
};

class BatchSession;

// Runs the prompt through `session`, continuing the sequence it already holds (a chat's
// earlier turns; the last token generated before is not in the cache yet, so a caller
// continuing puts it first in the next prompt), and generates up to n_predict tokens: one
// sequence of a BatchGenerator (host/model/batch_generation.hpp), the one sampling loop.
// Throws vkf::Error for an empty prompt, a session without a window and without room for
// position() + prompt tokens, ids outside the vocabulary, or logits that are not finite. A
// full cache (no window) ends generation with StopReason::CacheFull; with a window the
// session's memory is constant. `session`: a Session, or a BatchSession over any front.
GenerationResult generate(BatchSession& session, std::span<const std::uint32_t> prompt,
                          const GenerationOptions& options);

}  // namespace vkf
