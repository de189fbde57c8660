#include "host/spec/perplexity.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace vkf {

PerplexityWindows perplexity_windows(std::size_t tokens, std::uint32_t ctx) {
    if (ctx < 4) {
        throw Error("perplexity: context length " + fmt::to_string(ctx) +
                    " is too short; at least 4 tokens are needed to score a window's second half");
    }
    if (tokens < ctx) {
        throw Error("perplexity: the text has " + fmt::to_string(tokens) + " tokens, fewer than one window of " +
                    fmt::to_string(ctx));
    }
    return PerplexityWindows{.ctx = ctx, .windows = tokens / ctx, .first = ctx / 2};
}

namespace {

template <typename T>
double nll_of(std::span<const T> logits, std::uint32_t target) {
    if (target >= logits.size()) {
        throw Error("perplexity: token id " + fmt::to_string(target) + " is not below the vocabulary size " +
                    fmt::to_string(logits.size()));
    }
    double top = -std::numeric_limits<double>::infinity();
    for (const T v : logits) {
        if (!std::isfinite(static_cast<double>(v))) {
            throw Error("perplexity: the logits are not finite");
        }
        top = std::max(top, static_cast<double>(v));
    }
    double sum = 0.0;
    for (const T v : logits) {
        sum += std::exp(static_cast<double>(v) - top);
    }
    return std::log(sum) + top - static_cast<double>(logits[target]);
}

}  // namespace

double token_nll(std::span<const float> logits, std::uint32_t target) {
    return nll_of(logits, target);
}

double token_nll(std::span<const double> logits, std::uint32_t target) {
    return nll_of(logits, target);
}

double NllSum::mean() const {
    return tokens ? nll / static_cast<double>(tokens) : std::numeric_limits<double>::quiet_NaN();
}

double NllSum::perplexity() const {
    return std::exp(mean());
}

}  // namespace vkf
