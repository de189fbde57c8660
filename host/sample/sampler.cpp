#include "host/sample/sampler.hpp"

#include "base/error.hpp"
#include "host/sample/sampler_stages.hpp"
#include "host/util/splitmix64.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace vkf {

Sampler::Sampler(SamplingParams params) : params_(std::move(params)), state_(params_.seed) {
    validate(params_);
    penalties_ = has_penalties(params_);
}

void Sampler::accept(std::span<const std::uint32_t> tokens) {
    if (!penalties_) {
        return;
    }
    for (std::uint32_t id : tokens) {
        recent_.push_back(id);
        if (recent_.size() > params_.penalty_last_n) {
            recent_.pop_front();
        }
    }
}

std::uint64_t Sampler::next_u64() {
    return splitmix64_next(state_);
}

double Sampler::next_uniform() {
    return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

std::uint32_t Sampler::sample(std::span<const float> logits) {
    return sample(logits, {});
}

std::uint32_t Sampler::sample(std::span<const float> logits, std::span<const std::uint8_t> allowed) {
    if (logits.empty()) {
        throw Error("sampling: the logits row is empty");
    }
    if (logits.size() > std::numeric_limits<std::uint32_t>::max()) {
        throw Error(fmt::format("sampling: {} logits do not fit 32-bit token ids", logits.size()));
    }
    for (std::size_t i = 0; i < logits.size(); ++i) {
        if (!std::isfinite(logits[i])) {
            throw Error(fmt::format("sampling: logit {} of {} is {} (non-finite logits are not sampled)", i,
                                    logits.size(),
                                    std::isnan(logits[i]) ? "NaN"
                                    : logits[i] > 0       ? "inf"
                                                          : "-inf"));
        }
    }
    check_bias_ids(params_, logits.size());
    if (!allowed.empty()) {
        if (allowed.size() != logits.size()) {
            throw Error(fmt::format("sampling: a mask of {} entries for {} logits", allowed.size(), logits.size()));
        }
        if (std::all_of(allowed.begin(), allowed.end(), [](std::uint8_t a) { return a == 0; })) {
            throw Error("sampling: the mask allows no token");
        }
    }
    const std::uint32_t token = choose(logits, allowed);
    const std::uint32_t picked[] = {token};
    accept(picked);
    return token;
}

std::uint32_t Sampler::choose(std::span<const float> logits, std::span<const std::uint8_t> allowed) {
    const bool greedy = params_.temperature == 0.0f || params_.top_k == 1;
    if (greedy && !penalties_ && params_.logit_bias.empty()) {
        // The raw argmax, without building a list of the whole vocabulary.
        std::size_t best = logits.size();
        for (std::size_t i = 0; i < logits.size(); ++i) {
            if ((allowed.empty() || allowed[i] != 0) && (best == logits.size() || logits[i] > logits[best])) {
                best = i;
            }
        }
        return static_cast<std::uint32_t>(best);
    }
    Candidates c = all_candidates(logits);
    apply_logit_bias(c, params_.logit_bias);
    if (penalties_) {
        const std::vector<std::uint32_t> recent(recent_.begin(), recent_.end());
        apply_penalties(c, recent, params_.repetition_penalty, params_.presence_penalty, params_.frequency_penalty);
    }
    if (!allowed.empty()) {
        std::erase_if(c, [&](const Candidate& x) { return allowed[x.id] == 0; });
    }
    if (greedy) {
        return argmax(c);
    }
    const bool truncate =
        params_.top_k != 0 || params_.typical_p < 1.0f || params_.top_p < 1.0f || params_.min_p > 0.0f;
    if (truncate) {  // plain temperature sampling walks the ids in order, no sort needed
        top_k(c, params_.top_k);
        typical_p(c, params_.typical_p);
        top_p(c, params_.top_p);
        min_p(c, params_.min_p);
    }
    apply_temperature(c, params_.temperature);
    return pick(c, next_uniform());
}

}  // namespace vkf
