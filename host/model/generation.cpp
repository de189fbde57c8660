#include "host/model/generation.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace vkf {

double GenerationResult::prefill_tokens_per_second() const {
    return prefill_time.count() > 0 ? prompt_tokens / prefill_time.count() : 0.0;
}

double GenerationResult::decode_tokens_per_second() const {
    const double steps = tokens.empty() ? 0.0 : static_cast<double>(tokens.size() - 1);
    return decode_time.count() > 0 ? steps / decode_time.count() : 0.0;
}

GenerationResult generate(SequenceModel& session, std::span<const std::uint32_t> prompt,
                          const GenerationOptions& options) {
    if (prompt.empty()) {
        throw Error("generate: the prompt is empty; give at least one token id");
    }
    if (options.n_predict == 0) {
        throw Error("generate: n_predict must be at least 1");
    }
    // The prompt must fit; generation then goes on until n_predict, a stop, or (without a key
    // window, whose ring of blocks never fills) the cache's capacity, which ends it with
    // StopReason::CacheFull.
    const std::uint64_t needed = std::uint64_t{session.position()} + prompt.size();
    if (session.window() == 0 && needed > session.max_tokens()) {
        throw Error("generate: " + fmt::to_string(session.position()) + " tokens already in the cache and a " +
                    fmt::to_string(prompt.size()) + "-token prompt need a KV cache of " + fmt::to_string(needed) +
                    " tokens; the session holds " + fmt::to_string(session.max_tokens()));
    }
    Sampler sampler(options.sampling);
    GenerationResult result{.prompt_tokens = static_cast<std::uint32_t>(prompt.size())};
    using clock = std::chrono::steady_clock;

    auto start = clock::now();
    std::vector<float> logits = session.forward(prompt, Logits::Last, options.on_prefill);
    for (std::uint32_t i = 0; i < options.n_predict; ++i) {
        const std::uint32_t token = sampler.sample(logits);
        result.tokens.push_back(token);
        if (options.keep_logits) {
            result.logits.insert(result.logits.end(), logits.begin(), logits.end());
        }
        if (i == 0) {
            result.prefill_time = clock::now() - start;
            start = clock::now();
        }
        bool go_on = true;
        if (options.on_token) {
            go_on = options.on_token(i, token);
        }
        if (std::find(options.stop_ids.begin(), options.stop_ids.end(), token) != options.stop_ids.end()) {
            result.stop = StopReason::StopToken;
            break;
        }
        if (!go_on) {
            result.stop = StopReason::Caller;
            break;
        }
        if (i + 1 < options.n_predict) {
            if (session.window() == 0 && session.position() >= session.max_tokens()) {
                result.stop = StopReason::CacheFull;
                break;
            }
            const std::uint32_t next[] = {token};
            logits = session.forward(next);
        }
    }
    result.decode_time = clock::now() - start;
    result.chunk_ends = session.chunk_ends();
    return result;
}

}  // namespace vkf
