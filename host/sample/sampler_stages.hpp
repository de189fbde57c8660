#pragma once
// The sampler chain's stages, each a function over a list of candidates (token id and its
// logit, in double), exposed so that each can be tested on its own against its formula.
//
// The chain (Sampler::sample), in llama.cpp's default order:
//   1. logit_bias          l[id] += bias
//   2. penalties           over the counts c of the last N tokens: a token with c > 0 has
//                          l /= r if l > 0 else l *= r (repetition_penalty r, as CTRL and
//                          Hugging Face), then l -= c * frequency + presence (OpenAI's).
//   -- with temperature 0: the argmax here (lowest id on ties); the rest cannot change it --
//   3. top_k               the k largest logits (ties towards the lower id)
//   4. typical_p           softmax p, entropy H = -sum p log p; candidates by ascending
//                          |-log p - H|, the smallest prefix whose mass reaches typical_p
//   5. top_p               by descending p, the smallest prefix whose mass reaches top_p
//   6. min_p               those with p >= min_p * p_max
//   7. temperature         l /= T
//   8. pick                one uniform u in [0, 1): the first candidate (in list order) whose
//                          cumulative softmax mass exceeds u times the total
// Stages 3-6 keep at least one candidate, compute p as the softmax of the candidates left by
// the previous stage, and leave the list sorted by descending logit (ties: lower id first).

#include "host/sample/sampling_params.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace vkf {

struct Candidate {
    std::uint32_t id = 0;
    double logit = 0.0;
};
using Candidates = std::vector<Candidate>;

// Every token of a logits row, in id order.
Candidates all_candidates(std::span<const float> logits);
// Stages 1 and 2 need the whole vocabulary in id order (all_candidates); ids outside it throw.
void apply_logit_bias(Candidates& vocab, std::span<const LogitBias> bias);
void apply_penalties(Candidates& vocab, std::span<const std::uint32_t> recent, float repetition, float presence,
                     float frequency);
// The id of the largest logit, lowest id on ties.
std::uint32_t argmax(const Candidates& c);
// Sorts by descending logit, ties towards the lower id (what stages 3-6 leave).
void sort_descending(Candidates& c);
void top_k(Candidates& c, std::uint32_t k);  // any order in; 0 or k >= size: sorts only
void typical_p(Candidates& c, double p);     // sorted in
void top_p(Candidates& c, double p);         // sorted in
void min_p(Candidates& c, double p);         // sorted in
void apply_temperature(Candidates& c, double temperature);
std::uint32_t pick(const Candidates& c, double uniform);

}  // namespace vkf
