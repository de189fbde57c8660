#include "host/model/layer_split.hpp"

#include "base/error.hpp"
#include "base/format.hpp"
#include "host/quant/quantized_checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace vkf {

namespace {

bool per_layer(TensorSlot slot) {
    switch (slot) {
        case TensorSlot::Embedding:
        case TensorSlot::PositionEmbedding:
        case TensorSlot::EmbeddingNorm:
        case TensorSlot::FinalNorm:
        case TensorSlot::LmHead:
            return false;
        default:
            return true;
    }
}

}  // namespace

ModelMemoryEstimate estimate_stage_memory(const ModelConfig& config, WeightFormat format, const SessionSize& session,
                                          const LayerRange& range) {
    check_layer_range(config, range);
    return estimate_model_memory(config, format, session, range);
}

std::vector<LayerRange> auto_split(const ModelConfig& config, WeightFormat format, const SessionSize& session,
                                   std::span<const std::uint64_t> budgets, std::string_view stage_noun) {
    const std::string noun(stage_noun);
    const std::size_t stages = budgets.size();
    const std::uint32_t n = config.n_layer;
    if (stages == 0) {
        throw Error("split auto: no " + noun + "s");
    }
    if (stages > n) {
        throw Error("split auto: " + fmt::to_string(stages) + " " + noun + "s, but the model has only " +
                    fmt::to_string(n) + " layers (every stage needs at least one)");
    }
    // One layer's weights and KV cache; every layer has the same shapes.
    std::uint64_t layer = estimate_session_memory(config, session, LayerRange{0, 1}).kv_cache;
    for (const ExpectedTensor& t : expected_tensors(config)) {
        layer += per_layer(t.slot) && t.layer == 0 ? tensor_bytes(t, format) : 0;
    }
    layer = std::max<std::uint64_t>(layer, 1);
    // Each stage's fixed part: its estimate with k layers (one, or all for a single stage)
    // less k layers. Where the first stage is also the last, it has both ends.
    std::vector<std::uint64_t> base(stages), capacity(stages);
    std::uint64_t need = std::uint64_t{n} * layer, have = 0, total_capacity = 0;
    for (std::size_t i = 0; i < stages; ++i) {
        const std::uint32_t k = stages == 1 ? n : 1;
        const LayerRange probe = i == 0 ? LayerRange{0, k} : i + 1 == stages ? LayerRange{n - k, n} : LayerRange{1, 2};
        base[i] = estimate_model_memory(config, format, session, probe).total() - std::uint64_t{k} * layer;
        need += base[i];
        have += budgets[i];
        capacity[i] = budgets[i] > base[i] ? std::min<std::uint64_t>((budgets[i] - base[i]) / layer, n) : 0;
        total_capacity += capacity[i];
    }
    const auto numbers = [&] {
        std::string text;
        for (std::size_t i = 0; i < stages; ++i) {
            text += (i > 0 ? ", " : "") + noun + " " + fmt::to_string(i) + " " + size_text(budgets[i]);
        }
        return text;
    };
    if (total_capacity < n || need > have) {
        throw Error("split auto: the model needs " + size_with_bytes(need) + " of device memory over " +
                    fmt::to_string(stages) + " " + noun + "s (weights in " + to_string(format) +
                    ", KV cache and activations), but they have " + size_with_bytes(have) + " (" + numbers() +
                    "); use a smaller weight format, fewer tokens or more " + noun + "s");
    }
    for (std::size_t i = 0; i < stages; ++i) {
        if (capacity[i] == 0) {
            throw Error("split auto: " + noun + " " + fmt::to_string(i) + " has " + size_text(budgets[i]) +
                        ", not enough for its stage's fixed part (" + size_text(base[i]) + ") and one layer (" +
                        size_text(layer) + "); give it fewer or no layers with --split");
        }
    }
    // Layers in proportion to capacity (cumulative rounding), then at least one and at most
    // the capacity per stage.
    std::vector<std::uint32_t> counts(stages);
    std::uint64_t cumulative = 0;
    std::uint32_t previous = 0;
    for (std::size_t i = 0; i < stages; ++i) {
        cumulative += capacity[i];
        const auto bound =
            i + 1 == stages
                ? n
                : static_cast<std::uint32_t>(std::llround(static_cast<double>(n) * cumulative / total_capacity));
        counts[i] = bound - std::min(bound, previous);
        previous = std::max(bound, previous);
    }
    for (std::size_t i = 0; i < stages; ++i) {
        while (counts[i] == 0 || counts[i] > capacity[i]) {
            const bool take = counts[i] == 0;
            std::size_t best = stages;
            for (std::size_t j = 0; j < stages; ++j) {
                const bool ok = take ? counts[j] > 1 : counts[j] < capacity[j];
                if (j != i && ok && (best == stages || (take ? counts[j] > counts[best] : counts[j] < counts[best]))) {
                    best = j;
                }
            }
            if (best == stages) {
                throw Error("split auto: found no division of " + fmt::to_string(n) + " layers over " + numbers());
            }
            counts[take ? i : best] += 1;
            counts[take ? best : i] -= 1;
        }
    }
    std::vector<LayerRange> ranges;
    std::uint32_t begin = 0;
    for (const std::uint32_t c : counts) {
        ranges.push_back(LayerRange{begin, begin + c});
        begin += c;
    }
    return ranges;
}

}  // namespace vkf
