#include "host/sample/logprobs.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace vkf {

TokenLogprobs token_logprobs(std::span<const float> logits, std::uint32_t chosen, std::uint32_t top_n) {
    if (logits.empty() || chosen >= logits.size()) {
        throw Error(fmt::format("logprobs: token {} is outside a row of {} logits", chosen, logits.size()));
    }
    const double max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float l : logits) {
        sum += std::exp(static_cast<double>(l) - max_logit);
    }
    const double log_z = max_logit + std::log(sum);
    const auto logprob = [&](std::uint32_t id) { return static_cast<double>(logits[id]) - log_z; };
    TokenLogprobs out{.chosen = {chosen, logprob(chosen)}};
    const std::size_t n = std::min<std::size_t>(top_n, logits.size());
    std::vector<std::uint32_t> ids(logits.size());
    for (std::uint32_t i = 0; i < ids.size(); ++i) {
        ids[i] = i;
    }
    std::partial_sort(
        ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
        [&](std::uint32_t a, std::uint32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (std::size_t i = 0; i < n; ++i) {
        out.top.push_back({ids[i], logprob(ids[i])});
    }
    return out;
}

}  // namespace vkf
