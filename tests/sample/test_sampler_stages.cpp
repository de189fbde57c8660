// Each stage of the sampler chain (host/sample/sampler_stages.hpp) against a float64
// reference of its formula written here from the definitions, on seeded random logits; then
// the whole chain against the references fed the same splitmix64 uniforms, and determinism
// per seed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "host/sample/sampler.hpp"
#include "host/sample/sampler_stages.hpp"

namespace {

using vkf::Candidates;
using Ids = std::vector<std::uint32_t>;

// Deterministic logits: splitmix64 uniforms through Box-Muller, scaled to a spread like a
// model's (sd 3).
std::vector<float> random_logits(std::size_t n, std::uint64_t seed) {
    std::uint64_t s = seed;
    const auto uniform = [&s] {
        std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return (static_cast<double>((z ^ (z >> 31)) >> 11) + 0.5) * 0x1.0p-53;
    };
    std::vector<float> l(n);
    for (float& x : l) {
        x = static_cast<float>(3.0 * std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * M_PI * uniform()));
    }
    return l;
}

std::vector<double> as_double(const std::vector<float>& l) {
    return {l.begin(), l.end()};
}

// Reference: probabilities of the ids `live` under logits `l` (a map id -> p).
std::map<std::uint32_t, double> softmax_of(const std::vector<double>& l, const Ids& live) {
    double m = -INFINITY;
    for (std::uint32_t id : live) {
        m = std::max(m, l[id]);
    }
    double z = 0.0;
    for (std::uint32_t id : live) {
        z += std::exp(l[id] - m);
    }
    std::map<std::uint32_t, double> p;
    for (std::uint32_t id : live) {
        p[id] = std::exp(l[id] - m) / z;
    }
    return p;
}

// Reference: the ids by descending logit, ties to the lower id.
Ids by_logit(const std::vector<double>& l, Ids live) {
    std::sort(live.begin(), live.end(),
              [&](std::uint32_t a, std::uint32_t b) { return l[a] != l[b] ? l[a] > l[b] : a < b; });
    return live;
}

Ids all_ids(std::size_t n) {
    Ids ids(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        ids[i] = i;
    }
    return ids;
}

Ids ref_top_k(const std::vector<double>& l, const Ids& live, std::uint32_t k) {
    Ids sorted = by_logit(l, live);
    if (k != 0 && k < sorted.size()) {
        sorted.resize(k);
    }
    return sorted;
}

// The smallest set of ids, taken in `order`, whose probability reaches `mass`.
Ids take_mass(const std::map<std::uint32_t, double>& p, const Ids& order, double mass) {
    Ids kept;
    double sum = 0.0;
    for (std::uint32_t id : order) {
        kept.push_back(id);
        sum += p.at(id);
        if (sum >= mass) {
            break;
        }
    }
    return kept;
}

Ids ref_top_p(const std::vector<double>& l, const Ids& live, double top_p) {
    return top_p >= 1.0 ? by_logit(l, live) : by_logit(l, take_mass(softmax_of(l, live), by_logit(l, live), top_p));
}

Ids ref_typical(const std::vector<double>& l, const Ids& live, double tau) {
    if (tau >= 1.0) {
        return by_logit(l, live);
    }
    const auto p = softmax_of(l, live);
    double h = 0.0;
    for (const auto& [id, q] : p) {
        h += q > 0 ? -q * std::log(q) : 0.0;
    }
    Ids order = by_logit(l, live);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return std::fabs(-std::log(p.at(a)) - h) < std::fabs(-std::log(p.at(b)) - h);
    });
    return by_logit(l, take_mass(p, order, tau));
}

Ids ref_min_p(const std::vector<double>& l, const Ids& live, double min_p) {
    const auto p = softmax_of(l, live);
    double top = 0.0;
    for (const auto& [id, q] : p) {
        top = std::max(top, q);
    }
    Ids kept;
    for (std::uint32_t id : by_logit(l, live)) {
        if (p.at(id) >= min_p * top) {
            kept.push_back(id);
        }
    }
    return kept;
}

void ref_penalties(std::vector<double>& l, const Ids& recent, double rep, double presence, double frequency) {
    std::map<std::uint32_t, int> count;
    for (std::uint32_t id : recent) {
        ++count[id];
    }
    for (const auto& [id, c] : count) {
        l[id] = l[id] > 0 ? l[id] / rep : l[id] * rep;
        l[id] -= c * frequency + presence;
    }
}

// Inverse CDF over `live` in its order.
std::uint32_t ref_pick(const std::vector<double>& l, const Ids& live, double u) {
    const auto p = softmax_of(l, live);
    double cdf = 0.0;
    for (std::uint32_t id : live) {
        cdf += p.at(id);
        if (u < cdf) {
            return id;
        }
    }
    return live.back();
}

Ids ids_of(const Candidates& c) {
    Ids ids;
    for (const auto& x : c) {
        ids.push_back(x.id);
    }
    return ids;
}

constexpr std::size_t kVocab = 500;

TEST(SamplerStages, LogitBiasAndPenaltiesMatchTheirFormulas) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        const std::vector<float> logits = random_logits(kVocab, seed);
        const Ids recent = {3, 7, 7, 7, 42, 499, 3, 0, 250};
        const std::vector<vkf::LogitBias> bias = {{5, -100.0f}, {7, 2.5f}, {499, 0.75f}};
        Candidates c = vkf::all_candidates(logits);
        vkf::apply_logit_bias(c, bias);
        vkf::apply_penalties(c, recent, 1.3f, 0.4f, 0.25f);
        std::vector<double> ref = as_double(logits);
        for (const auto& b : bias) {
            ref[b.id] += b.bias;
        }
        ref_penalties(ref, recent, 1.3f, 0.4f, 0.25f);
        for (std::uint32_t id = 0; id < kVocab; ++id) {
            EXPECT_NEAR(c[id].logit, ref[id], 1e-12) << "seed " << seed << " id " << id;
        }
    }
}

TEST(SamplerStages, TruncationsKeepWhatTheirFormulasKeep) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const std::vector<float> logits = random_logits(kVocab, seed);
        const std::vector<double> l = as_double(logits);
        const std::uint32_t k = static_cast<std::uint32_t>(seed * 13 % 300);
        const double tau = 0.2 + 0.04 * static_cast<double>(seed);
        const double p = 0.95 - 0.03 * static_cast<double>(seed);
        const double m = 0.002 * static_cast<double>(seed);

        Candidates c = vkf::all_candidates(logits);
        vkf::top_k(c, k);
        const Ids after_k = ref_top_k(l, all_ids(kVocab), k);
        ASSERT_EQ(ids_of(c), after_k) << "top_k seed " << seed;
        vkf::typical_p(c, tau);
        const Ids after_typical = ref_typical(l, after_k, tau);
        ASSERT_EQ(ids_of(c), after_typical) << "typical_p seed " << seed;
        vkf::top_p(c, p);
        const Ids after_p = ref_top_p(l, after_typical, p);
        ASSERT_EQ(ids_of(c), after_p) << "top_p seed " << seed;
        vkf::min_p(c, m);
        ASSERT_EQ(ids_of(c), ref_min_p(l, after_p, m)) << "min_p seed " << seed;
        ASSERT_FALSE(c.empty());
    }
}

TEST(SamplerStages, EachTruncationAloneOnTheWholeVocabulary) {
    const std::vector<float> logits = random_logits(kVocab, 99);
    const std::vector<double> l = as_double(logits);
    const Ids all = all_ids(kVocab);
    for (double x : {0.05, 0.5, 0.9, 0.999}) {
        Candidates c = vkf::all_candidates(logits);
        vkf::sort_descending(c);
        vkf::typical_p(c, x);
        EXPECT_EQ(ids_of(c), ref_typical(l, all, x)) << x;
        c = vkf::all_candidates(logits);
        vkf::sort_descending(c);
        vkf::top_p(c, x);
        EXPECT_EQ(ids_of(c), ref_top_p(l, all, x)) << x;
        c = vkf::all_candidates(logits);
        vkf::sort_descending(c);
        vkf::min_p(c, x);
        EXPECT_EQ(ids_of(c), ref_min_p(l, all, x)) << x;
    }
}

TEST(SamplerStages, TemperatureAndPickInvertTheCdf) {
    const std::vector<float> logits = random_logits(64, 7);
    for (double t : {0.3, 1.0, 1.7}) {
        Candidates c = vkf::all_candidates(logits);
        vkf::apply_temperature(c, t);
        std::vector<double> l = as_double(logits);
        for (double& x : l) {
            x /= t;
        }
        for (std::size_t i = 0; i < c.size(); ++i) {
            ASSERT_NEAR(c[i].logit, l[i], 1e-12);
        }
        for (double u = 0.0; u < 1.0; u += 0.0371) {
            EXPECT_EQ(vkf::pick(c, u), ref_pick(l, all_ids(64), u)) << "T " << t << " u " << u;
        }
    }
}

// The whole chain: the reference stages in the documented order, with the uniforms of the
// documented generator, pick what Sampler picks, token after token (the penalties seeing the
// prompt and each pick).
TEST(SamplerChain, EveryStageTogetherMatchesTheReferenceChain) {
    const vkf::SamplingParams params{.temperature = 0.8f,
                                     .top_k = 200,
                                     .top_p = 0.9f,
                                     .seed = 1234,
                                     .min_p = 0.01f,
                                     .typical_p = 0.95f,
                                     .repetition_penalty = 1.2f,
                                     .presence_penalty = 0.3f,
                                     .frequency_penalty = 0.2f,
                                     .penalty_last_n = 16,
                                     .logit_bias = {{4, 3.0f}, {9, -100.0f}}};
    vkf::Sampler sampler(params);
    Ids history = {4, 4, 10, 11};
    sampler.accept(history);
    std::uint64_t state = params.seed;
    for (int step = 0; step < 60; ++step) {
        const std::vector<float> logits = random_logits(kVocab, 1000 + step % 3);
        std::vector<double> l = as_double(logits);
        for (const auto& b : params.logit_bias) {
            l[b.id] += b.bias;
        }
        const Ids recent(history.end() - std::min<std::ptrdiff_t>(16, std::ssize(history)), history.end());
        ref_penalties(l, recent, params.repetition_penalty, params.presence_penalty, params.frequency_penalty);
        Ids live = ref_top_k(l, all_ids(kVocab), params.top_k);
        live = ref_typical(l, live, params.typical_p);
        live = ref_top_p(l, live, params.top_p);
        live = ref_min_p(l, live, params.min_p);
        for (double& x : l) {
            x /= params.temperature;
        }
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        const double u = static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
        const std::uint32_t expected = ref_pick(l, live, u);
        ASSERT_EQ(sampler.sample(logits), expected) << "step " << step;
        ASSERT_NE(expected, 9u);  // banned by its bias
        history.push_back(expected);
    }
}

TEST(SamplerChain, GreedyAppliesBiasAndPenaltiesOnly) {
    const std::vector<float> logits = random_logits(kVocab, 5);
    const std::uint32_t raw_best =
        static_cast<std::uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    vkf::Sampler plain(vkf::SamplingParams{});
    EXPECT_EQ(plain.sample(logits), raw_best);
    vkf::Sampler banned(vkf::SamplingParams{.logit_bias = {{raw_best, -100.0f}}});
    EXPECT_NE(banned.sample(logits), raw_best);
    // A strong repetition penalty moves greedy decoding off the token it just produced.
    vkf::Sampler repeating(vkf::SamplingParams{.repetition_penalty = 1e6f});
    const std::uint32_t first = repeating.sample(logits);
    EXPECT_EQ(first, raw_best);
    EXPECT_NE(repeating.sample(logits), first);
}

TEST(SamplerChain, SameSeedSameIdsOtherSeedOtherIds) {
    const auto run = [](std::uint64_t seed) {
        vkf::Sampler s(vkf::SamplingParams{.temperature = 1.1f,
                                           .top_k = 100,
                                           .top_p = 0.95f,
                                           .seed = seed,
                                           .min_p = 0.001f,
                                           .typical_p = 0.98f,
                                           .repetition_penalty = 1.1f,
                                           .presence_penalty = 0.1f,
                                           .frequency_penalty = 0.1f});
        Ids out;
        for (int i = 0; i < 40; ++i) {
            out.push_back(s.sample(random_logits(kVocab, 77 + i)));
        }
        return out;
    };
    EXPECT_EQ(run(3), run(3));
    EXPECT_NE(run(3), run(4));
}

TEST(SamplerChain, BadSettingsAndBiasIdsAreNamed) {
    const auto message = [](const vkf::SamplingParams& p) {
        try {
            vkf::Sampler s(p);
            s.sample(random_logits(10, 1));
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message({.min_p = 1.5f}).find("min_p"), std::string::npos);
    EXPECT_NE(message({.typical_p = 0.0f}).find("typical_p"), std::string::npos);
    EXPECT_NE(message({.repetition_penalty = 0.0f}).find("repetition_penalty"), std::string::npos);
    EXPECT_NE(message({.presence_penalty = NAN}).find("presence_penalty"), std::string::npos);
    EXPECT_NE(message({.frequency_penalty = INFINITY}).find("frequency_penalty"), std::string::npos);
    EXPECT_NE(message({.logit_bias = {{10, 1.0f}}}).find("token 10, outside the vocabulary of 10"), std::string::npos);
    EXPECT_NE(message({.logit_bias = {{1, NAN}}}).find("logit_bias[0]"), std::string::npos);
}

}  // namespace
