#include "host/model/layer_range.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <numeric>

namespace vkf {

LayerRange all_layers(const ModelConfig& config) {
    return LayerRange{.begin = 0, .end = config.n_layer};
}

std::string describe(const LayerRange& range, const ModelConfig& config) {
    if (range.size() == 0) {
        return "no layers (" + fmt::to_string(range.begin) + ".." + fmt::to_string(range.end) + ") of " +
               fmt::to_string(config.n_layer);
    }
    return "layers " + fmt::to_string(range.begin) + ".." + fmt::to_string(range.end - 1) + " of " +
           fmt::to_string(config.n_layer);
}

void check_layer_range(const ModelConfig& config, const LayerRange& range) {
    if (range.begin >= range.end || range.end > config.n_layer) {
        throw Error("model: a stage holds layers [" + fmt::to_string(range.begin) + ", " + fmt::to_string(range.end) +
                    "), which is not a non-empty range of the model's " + fmt::to_string(config.n_layer) + " layers");
    }
}

bool stage_owns(const ModelConfig& config, const LayerRange& range, const ExpectedTensor& tensor) {
    const bool first = range.begin == 0;
    const bool last = range.end == config.n_layer;
    switch (tensor.slot) {
        case TensorSlot::Embedding:
            // A tied head multiplies by the embedding table: the last stage holds it too.
            return first || (last && config.tie_word_embeddings);
        case TensorSlot::PositionEmbedding:
        case TensorSlot::EmbeddingNorm:
            return first;
        case TensorSlot::FinalNorm:
        case TensorSlot::LmHead:
            return last;
        default:
            return range.contains(tensor.layer);
    }
}

std::vector<ExpectedTensor> stage_tensors(const ModelConfig& config, const LayerRange& range) {
    std::vector<ExpectedTensor> tensors = expected_tensors(config);
    std::erase_if(tensors, [&](const ExpectedTensor& t) { return !stage_owns(config, range, t); });
    return tensors;
}

std::vector<LayerRange> split_layers(const ModelConfig& config, std::span<const std::uint32_t> counts) {
    if (counts.empty()) {
        throw Error("split: no stages");
    }
    if (counts.size() > config.n_layer) {
        throw Error("split: " + fmt::to_string(counts.size()) + " stages, but the model has only " +
                    fmt::to_string(config.n_layer) + " layers (every stage needs at least one)");
    }
    const std::uint64_t sum = std::accumulate(counts.begin(), counts.end(), std::uint64_t{0});
    std::vector<LayerRange> ranges;
    std::uint32_t begin = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        if (counts[i] == 0) {
            throw Error("split: stage " + fmt::to_string(i) + " has no layers; every stage needs at least one");
        }
        if (sum != config.n_layer) {
            break;
        }
        ranges.push_back(LayerRange{.begin = begin, .end = begin + counts[i]});
        begin += counts[i];
    }
    if (sum != config.n_layer) {
        throw Error("split: the stages' layers sum to " + fmt::to_string(sum) + ", but the model has " +
                    fmt::to_string(config.n_layer) + " layers");
    }
    return ranges;
}

std::vector<std::uint32_t> parse_layer_counts(const std::string& text) {
    std::vector<std::uint32_t> counts;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        std::uint32_t value = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (part.empty() || ec != std::errc() || end != part.data() + part.size()) {
            throw Error("split: '" + text + "' is not a comma-separated list of layer counts (e.g. 12,12)");
        }
        counts.push_back(value);
        if (comma == std::string::npos) {
            return counts;
        }
        start = comma + 1;
    }
}

}  // namespace vkf
