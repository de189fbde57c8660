#include "host/sample/sampler_stages.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

namespace vkf {
namespace {

bool before(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// softmax of the candidates' logits, in list order.
std::vector<double> probabilities(const Candidates& c) {
    double max_logit = -std::numeric_limits<double>::infinity();
    for (const Candidate& x : c) {
        max_logit = std::max(max_logit, x.logit);
    }
    std::vector<double> p(c.size());
    double total = 0.0;
    for (std::size_t i = 0; i < c.size(); ++i) {
        p[i] = std::exp(c[i].logit - max_logit);
        total += p[i];
    }
    for (double& v : p) {
        v /= total;
    }
    return p;
}

// Keeps the first `n` of `order` (indices into c), then sorts them as stages leave them.
void keep(Candidates& c, const std::vector<std::size_t>& order, std::size_t n) {
    Candidates kept;
    kept.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        kept.push_back(c[order[i]]);
    }
    sort_descending(kept);
    c = std::move(kept);
}

// The shortest prefix of `order` whose probability mass reaches `mass` (at least one).
std::size_t prefix_reaching(const std::vector<double>& p, const std::vector<std::size_t>& order, double mass) {
    double cumulative = 0.0;
    for (std::size_t i = 0; i < order.size(); ++i) {
        cumulative += p[order[i]];
        if (cumulative >= mass) {
            return i + 1;
        }
    }
    return order.size();  // rounding left the sum just under a mass of 1
}

}  // namespace

Candidates all_candidates(std::span<const float> logits) {
    Candidates c(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i) {
        c[i] = {static_cast<std::uint32_t>(i), static_cast<double>(logits[i])};
    }
    return c;
}

void apply_logit_bias(Candidates& vocab, std::span<const LogitBias> bias) {
    for (const LogitBias& b : bias) {
        if (b.id >= vocab.size()) {
            throw Error(
                fmt::format("sampling: logit_bias is for token {}, outside the vocabulary of {}", b.id, vocab.size()));
        }
        vocab[b.id].logit += b.bias;
    }
}

void apply_penalties(Candidates& vocab, std::span<const std::uint32_t> recent, float repetition, float presence,
                     float frequency) {
    std::unordered_map<std::uint32_t, std::uint32_t> counts;
    for (std::uint32_t id : recent) {
        if (id < vocab.size()) {  // an id the model cannot produce cannot be penalized
            ++counts[id];
        }
    }
    for (const auto& [id, count] : counts) {
        double& l = vocab[id].logit;
        l = l > 0.0 ? l / repetition : l * repetition;
        l -= static_cast<double>(count) * frequency + presence;
    }
}

std::uint32_t argmax(const Candidates& c) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.size(); ++i) {
        if (before(c[i], c[best])) {
            best = i;
        }
    }
    return c[best].id;
}

void sort_descending(Candidates& c) {
    std::sort(c.begin(), c.end(), before);
}

void top_k(Candidates& c, std::uint32_t k) {
    if (k == 0 || k >= c.size()) {
        sort_descending(c);
        return;
    }
    std::partial_sort(c.begin(), c.begin() + k, c.end(), before);
    c.resize(k);
}

void typical_p(Candidates& c, double p) {
    if (p >= 1.0 || c.size() <= 1) {
        return;
    }
    const std::vector<double> prob = probabilities(c);
    double entropy = 0.0;
    for (double q : prob) {
        if (q > 0.0) {
            entropy -= q * std::log(q);
        }
    }
    // How far each token's surprisal is from the expected one (inf for p == 0: last).
    std::vector<double> distance(c.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
        distance[i] = prob[i] > 0.0 ? std::fabs(-std::log(prob[i]) - entropy) : std::numeric_limits<double>::infinity();
    }
    std::vector<std::size_t> order(c.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return distance[a] < distance[b]; });
    keep(c, order, prefix_reaching(prob, order, p));
}

void top_p(Candidates& c, double p) {
    if (p >= 1.0 || c.size() <= 1) {
        return;
    }
    const std::vector<double> prob = probabilities(c);
    std::vector<std::size_t> order(c.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    c.resize(prefix_reaching(prob, order, p));
}

void min_p(Candidates& c, double p) {
    if (p <= 0.0 || c.empty()) {
        return;
    }
    const double max_logit = c.front().logit;
    // p_i >= min_p * p_max  <=>  exp(l_i - l_max) >= min_p; the first always stays.
    std::size_t n = 1;
    while (n < c.size() && std::exp(c[n].logit - max_logit) >= p) {
        ++n;
    }
    c.resize(n);
}

void apply_temperature(Candidates& c, double temperature) {
    for (Candidate& x : c) {
        x.logit /= temperature;
    }
}

std::uint32_t pick(const Candidates& c, double uniform) {
    double max_logit = -std::numeric_limits<double>::infinity();
    for (const Candidate& x : c) {
        max_logit = std::max(max_logit, x.logit);
    }
    double total = 0.0;
    for (const Candidate& x : c) {
        total += std::exp(x.logit - max_logit);
    }
    const double target = uniform * total;
    double cumulative = 0.0;
    std::size_t last_positive = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
        const double w = std::exp(c[i].logit - max_logit);
        if (w > 0.0) {
            last_positive = i;
            cumulative += w;
            if (target < cumulative) {
                return c[i].id;
            }
        }
    }
    return c[last_positive].id;  // rounding left the target at the very end
}

}  // namespace vkf
