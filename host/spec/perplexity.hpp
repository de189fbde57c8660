#pragma once
// What "perplexity at context length C" means here, whatever computes the logits (the GPU
// model, the CPU reference, a test's hand-made logits). The definition is llama.cpp's
// perplexity tool's, so the numbers can be compared with it:
//   - the text's token stream is cut into non-overlapping windows of C tokens from its
//     start; a remainder shorter than C is not scored;
//   - each window runs through the model on its own (positions 0..C-1, an empty cache);
//   - only its second half is scored: with first = C / 2, the logits of positions
//     first .. C-2 predict tokens first+1 .. C-1, so every scored token sees at least C/2
//     tokens of context and the scores measure the model at that length, not its start-up;
//   - perplexity = exp(sum of -log softmax(logits)[next token] / number of scored tokens).
// No BOS token is inserted (llama.cpp replaces a window's first token with BOS only for
// models whose tokenizer adds one; the tokenizers vkformer ships do not).
// No Vulkan.

#include <cstddef>
#include <cstdint>
#include <span>

namespace vkf {

struct PerplexityWindows {
    std::uint32_t ctx = 0;    // C
    std::size_t windows = 0;  // whole windows in the stream
    std::uint32_t first = 0;  // C / 2: the first position whose logits are scored
    std::uint32_t scored_per_window() const { return ctx - 1 - first; }
    std::size_t scored_tokens() const { return windows * scored_per_window(); }
    std::size_t begin(std::size_t window) const { return window * ctx; }  // offset in the stream
};

// The windows of a `tokens`-long stream at context length `ctx`. Throws vkf::Error for
// ctx < 4 (no second half to score) or a stream shorter than one window, naming both lengths.
PerplexityWindows perplexity_windows(std::size_t tokens, std::uint32_t ctx);

// -log softmax(logits)[target], in double with the maximum subtracted (no overflow for any
// finite logits). Throws vkf::Error for target out of range or non-finite logits.
double token_nll(std::span<const float> logits, std::uint32_t target);
double token_nll(std::span<const double> logits, std::uint32_t target);

// The sum of the scored tokens' negative log-likelihoods, and its perplexity.
struct NllSum {
    double nll = 0.0;
    std::size_t tokens = 0;
    void add(double token_nll) {
        nll += token_nll;
        ++tokens;
    }
    double mean() const;        // NaN when nothing was scored
    double perplexity() const;  // exp(mean())
};

}  // namespace vkf
