#include "host/spec/sampling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace vkf {

namespace {

std::string float_text(float value) {
    if (std::isnan(value)) {
        return "NaN";
    }
    if (std::isinf(value)) {
        return value > 0 ? "inf" : "-inf";
    }
    return fmt::format("{:f}", value);
}

// Lowest id among the largest logits.
std::uint32_t argmax(std::span<const float> logits) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < logits.size(); ++i) {
        if (logits[i] > logits[best]) {
            best = i;
        }
    }
    return static_cast<std::uint32_t>(best);
}

}  // namespace

void validate(const SamplingParams& params) {
    if (!(params.temperature >= 0.0f) || !std::isfinite(params.temperature)) {
        throw Error("sampling: temperature must be finite and >= 0 (0 for greedy), got " +
                    float_text(params.temperature));
    }
    if (!(params.top_p > 0.0f && params.top_p <= 1.0f)) {
        throw Error("sampling: top_p must be in (0, 1] (1 turns it off), got " + float_text(params.top_p));
    }
}

Sampler::Sampler(SamplingParams params) : params_(params), state_(params.seed) {
    validate(params_);
}

// splitmix64 (Steele, Lea and Flood, 2014).
std::uint64_t Sampler::next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double Sampler::next_uniform() {
    return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

std::uint32_t Sampler::sample(std::span<const float> logits) {
    if (logits.empty()) {
        throw Error("sampling: the logits row is empty");
    }
    if (logits.size() > std::numeric_limits<std::uint32_t>::max()) {
        throw Error("sampling: " + fmt::to_string(logits.size()) + " logits do not fit 32-bit token ids");
    }
    for (std::size_t i = 0; i < logits.size(); ++i) {
        if (!std::isfinite(logits[i])) {
            throw Error("sampling: logit " + fmt::to_string(i) + " of " + fmt::to_string(logits.size()) + " is " +
                        float_text(logits[i]) + " (non-finite logits are not sampled)");
        }
    }
    if (params_.temperature == 0.0f || params_.top_k == 1) {
        return argmax(logits);
    }

    const double temperature = params_.temperature;
    const double max_logit = logits[argmax(logits)];
    // Unnormalized probabilities exp((l - max) / T): in (0, 1], the maximum exactly 1.
    const auto weight = [&](std::uint32_t id) {
        return std::exp((static_cast<double>(logits[id]) - max_logit) / temperature);
    };
    const std::size_t vocab = logits.size();
    const bool truncate_k = params_.top_k != 0 && params_.top_k < vocab;
    const bool truncate_p = params_.top_p < 1.0f;

    if (!truncate_k && !truncate_p) {
        // Plain temperature sampling: walk the ids in order, no sort needed.
        double total = 0.0;
        for (std::uint32_t id = 0; id < vocab; ++id) {
            total += weight(id);
        }
        const double target = next_uniform() * total;
        double cumulative = 0.0;
        std::uint32_t last_positive = 0;
        for (std::uint32_t id = 0; id < vocab; ++id) {
            const double p = weight(id);
            if (p > 0.0) {
                last_positive = id;
                cumulative += p;
                if (target < cumulative) {
                    return id;
                }
            }
        }
        return last_positive;  // rounding left the target at the very end
    }

    // Candidates by descending logit (= descending probability), ties towards the lower id.
    std::vector<std::uint32_t> order(vocab);
    for (std::uint32_t id = 0; id < vocab; ++id) {
        order[id] = id;
    }
    const auto before = [&](std::uint32_t a, std::uint32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    std::size_t kept = vocab;
    if (truncate_k) {
        kept = params_.top_k;
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kept), order.end(), before);
    } else {
        std::sort(order.begin(), order.end(), before);
    }
    std::vector<double> weights(kept);
    double total = 0.0;
    for (std::size_t r = 0; r < kept; ++r) {
        weights[r] = weight(order[r]);
        total += weights[r];
    }
    if (truncate_p) {
        // Smallest prefix whose mass reaches top_p of the survivors' mass.
        const double threshold = static_cast<double>(params_.top_p) * total;
        double mass = 0.0;
        std::size_t prefix = 0;
        while (prefix < kept) {
            mass += weights[prefix++];
            if (mass >= threshold) {
                break;
            }
        }
        kept = prefix;
        total = mass;
    }
    const double target = next_uniform() * total;
    double cumulative = 0.0;
    std::size_t last_positive = 0;
    for (std::size_t r = 0; r < kept; ++r) {
        if (weights[r] > 0.0) {
            last_positive = r;
            cumulative += weights[r];
            if (target < cumulative) {
                return order[r];
            }
        }
    }
    return order[last_positive];  // rounding left the target at the very end
}

}  // namespace vkf
