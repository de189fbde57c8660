#include "host/model/perplexity.hpp"

#include <algorithm>

namespace vkf {

PerplexityResult perplexity(const Model& model, std::span<const std::uint32_t> tokens, std::uint32_t ctx,
                            const PerplexityOptions& options) {
    PerplexityResult result{.windows = perplexity_windows(tokens.size(), ctx)};
    PerplexityWindows& w = result.windows;
    if (options.max_windows > 0) {
        w.windows = std::min(w.windows, options.max_windows);
    }
    const std::size_t vocab = model.config().vocab_size;
    const auto start = std::chrono::steady_clock::now();
    Session session(model, SessionOptions{.max_tokens = ctx,
                                          .chunk = options.chunk,
                                          .kv_dtype = options.kv_dtype,
                                          .kv_k_quant = options.kv_k_quant,
                                          .kv_v_quant = options.kv_v_quant,
                                          .window = options.attention_window});
    for (std::size_t i = 0; i < w.windows; ++i) {
        const std::span<const std::uint32_t> window = tokens.subspan(w.begin(i), ctx);
        session.reset();
        session.forward(window.first(w.first), Session::Logits::None);
        // Logits of positions first .. ctx-2, scored against the token after each.
        for (std::uint32_t j = w.first; j + 1 < ctx; j += options.chunk) {
            const std::uint32_t n = std::min(options.chunk, ctx - 1 - j);
            const std::vector<float> logits = session.forward(window.subspan(j, n), Session::Logits::All);
            for (std::uint32_t r = 0; r < n; ++r) {
                result.sum.add(token_nll(std::span(logits).subspan(r * vocab, vocab), window[j + r + 1]));
            }
        }
        if (options.progress) {
            options.progress(i + 1, w.windows);
        }
    }
    result.time = std::chrono::steady_clock::now() - start;
    return result;
}

}  // namespace vkf
