#include "apps/bench/model_work.hpp"

#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/model_tensors.hpp"

#include <algorithm>

namespace vkf::bench {

namespace {

std::uint64_t layer_params(const ModelConfig& c) {
    const std::uint64_t h = c.hidden, f = c.ffn_hidden;
    return 3 * h * h + h * h + 2 * h * f;
}

}  // namespace

std::uint64_t layers_flops(const ModelConfig& c, std::uint64_t past, std::uint64_t tokens, std::uint64_t window) {
    // Keys the rows see: row i (0-based, after `past`) sees past + i + 1 of them, at most
    // window + 1 under a key window.
    std::uint64_t visible = 0;
    if (window == 0) {
        visible = tokens * past + tokens * (tokens + 1) / 2;
    } else {
        for (std::uint64_t i = 0; i < tokens; ++i) {
            visible += std::min(past + i + 1, window + 1);
        }
    }
    return c.n_layer * (2 * tokens * layer_params(c) + 4 * visible * c.hidden);
}

std::uint64_t bytes_read_per_pass(const ModelConfig& c, WeightFormat format, bool with_head) {
    std::uint64_t bytes = 0;
    for (const ExpectedTensor& t : expected_tensors(c)) {
        const bool table = t.role == TensorRole::Embedding;
        const bool head = t.name == "lm_head.weight" || (table && c.tie_word_embeddings);
        if ((table || head) && !(head && with_head)) {
            continue;
        }
        bytes += tensor_bytes(t, format);
    }
    return bytes;
}

std::vector<std::uint32_t> token_ids(std::uint32_t n, std::uint32_t vocab, std::uint32_t stream) {
    std::vector<std::uint32_t> ids(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        ids[i] = static_cast<std::uint32_t>((i * 7919ull + 13u + stream * 104729ull) % vocab);
    }
    return ids;
}

std::uint64_t largest_tensor_bytes(const ModelConfig& c, WeightFormat format) {
    std::uint64_t largest = 0;
    for (const ExpectedTensor& t : expected_tensors(c)) {
        largest = std::max(largest, tensor_bytes(t, format));
    }
    return largest;
}

}  // namespace vkf::bench
