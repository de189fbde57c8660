#include "host/sample/sampling_params.hpp"

#include "base/error.hpp"

#include <cmath>

#include <fmt/format.h>

namespace vkf {

void validate(const SamplingParams& params) {
    const auto check = [](bool ok, const char* name, float value, const char* rule) {
        if (!ok) {
            throw Error(fmt::format("sampling: {} must be {}, got {}", name, rule, value));
        }
    };
    check(params.temperature >= 0.0f && std::isfinite(params.temperature), "temperature", params.temperature,
          "finite and >= 0 (0 for greedy)");
    check(params.top_p > 0.0f && params.top_p <= 1.0f, "top_p", params.top_p, "in (0, 1] (1 turns it off)");
    check(params.typical_p > 0.0f && params.typical_p <= 1.0f, "typical_p", params.typical_p,
          "in (0, 1] (1 turns it off)");
    check(params.min_p >= 0.0f && params.min_p <= 1.0f, "min_p", params.min_p, "in [0, 1] (0 turns it off)");
    check(params.repetition_penalty > 0.0f && std::isfinite(params.repetition_penalty), "repetition_penalty",
          params.repetition_penalty, "finite and > 0 (1 turns it off)");
    check(std::isfinite(params.presence_penalty), "presence_penalty", params.presence_penalty, "finite");
    check(std::isfinite(params.frequency_penalty), "frequency_penalty", params.frequency_penalty, "finite");
    for (std::size_t i = 0; i < params.logit_bias.size(); ++i) {
        if (!std::isfinite(params.logit_bias[i].bias)) {
            throw Error(fmt::format("sampling: logit_bias[{}] (token {}) must be finite, got {}", i,
                                    params.logit_bias[i].id, params.logit_bias[i].bias));
        }
    }
}

void check_bias_ids(const SamplingParams& params, std::uint64_t vocab_size) {
    for (std::size_t i = 0; i < params.logit_bias.size(); ++i) {
        if (params.logit_bias[i].id >= vocab_size) {
            throw Error(fmt::format("sampling: logit_bias[{}] is for token {}, outside the vocabulary of {}", i,
                                    params.logit_bias[i].id, vocab_size));
        }
    }
}

bool has_penalties(const SamplingParams& params) {
    return params.penalty_last_n > 0 &&
           (params.repetition_penalty != 1.0f || params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f);
}

}  // namespace vkf
