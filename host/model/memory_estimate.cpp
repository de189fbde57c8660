#include "host/model/memory_estimate.hpp"

#include "base/error.hpp"
#include "base/format.hpp"
#include "host/model/session.hpp"
#include "host/quant/kv_quant.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/model_tensors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf {

namespace {

constexpr std::uint64_t kF32 = 4;

}  // namespace

std::string ModelMemoryEstimate::describe() const {
    return size_text(total()) + " (" + fmt::to_string(total()) + " bytes: weights " + size_text(weights) +
           ", KV cache " + size_text(kv_cache) + ", activations " + size_text(activations) + ")";
}

std::uint64_t weight_bytes(const ModelConfig& config, WeightFormat format, std::optional<LayerRange> layers) {
    std::uint64_t bytes = 0;
    for (const ExpectedTensor& t : stage_tensors(config, layers.value_or(all_layers(config)))) {
        bytes += tensor_bytes(t, format);
    }
    return bytes;
}

ModelMemoryEstimate estimate_session_memory(const ModelConfig& c, const SessionSize& session,
                                            std::optional<LayerRange> layers) {
    ModelMemoryEstimate e;
    const LayerRange range = layers.value_or(all_layers(c));
    if (session.max_tokens == 0) {
        return e;
    }
    const std::uint64_t chunk = std::clamp<std::uint32_t>(session.chunk, 1, session.max_tokens);
    const std::uint64_t kv_dim = std::uint64_t{c.n_kv_head} * c.head_dim;
    // The cache holds whole blocks.
    const std::uint64_t block = std::max<std::uint32_t>(session.block_size, 1);
    const std::uint64_t cache_tokens =
        session_cache_tokens(session.max_tokens, session.window, session.chunk, static_cast<std::uint32_t>(block));
    const std::uint64_t blocks = (cache_tokens + block - 1) / block;
    // Quantized key rows with their scales (kv_token_bytes), as KvCache allocates them.
    e.kv_cache = range.size() * blocks * block *
                 kv_token_bytes(session.kv_dtype, session.kv_k_quant, session.kv_v_quant, c.n_kv_head, c.head_dim);
    // A session's buffers (host/model/batch.cpp): hidden, normed, q and the attention output
    // [chunk, hidden], the QKV projection's output [chunk, hidden + 2 kv_dim] (which a session
    // that scatters QKV does without), the MLP's [chunk, ffn_hidden] (twice for a gated MLP),
    // the rows gathered for the head [chunk, hidden]; the ids, slots and logit rows (and
    // learned positions) [chunk] and the sequences' tables; the logits.
    const std::uint64_t mlp = family_traits(c.family).mlp == MlpKind::Gated ? 2ull * c.ffn_hidden : c.ffn_hidden;
    const std::uint64_t id_buffers = c.learned_pos_emb ? 4 : 3;
    const std::uint64_t sequence_table = std::uint64_t{std::max<std::uint32_t>(session.max_sequences, 1)} *
                                         (3 + (session.sequence_blocks != 0 ? session.sequence_blocks : blocks)) * 4;
    const std::uint64_t logits = range.end == c.n_layer ? chunk * c.vocab_size * kF32 : 0;
    e.activations = chunk * (5ull * c.hidden + c.hidden + 2 * kv_dim + mlp) * kF32 + id_buffers * chunk * 4 +
                    sequence_table + logits;
    return e;
}

ModelMemoryEstimate estimate_model_memory(const ModelConfig& config, WeightFormat format, const SessionSize& session,
                                          std::optional<LayerRange> layers) {
    ModelMemoryEstimate e = estimate_session_memory(config, session, layers);
    e.weights = weight_bytes(config, format, layers);
    return e;
}

void check_model_fits(const Context& ctx, const ModelMemoryEstimate& estimate, const std::string& what) {
    const MemoryBudget budget = ctx.memory_budget();
    if (estimate.total() <= budget.available()) {
        return;
    }
    throw Error(what + " needs " + estimate.describe() + " of device memory, but only " +
                size_with_bytes(budget.available()) + " are available: " + size_text(budget.device_local_available) +
                " device-local and " + size_text(budget.host_visible_available) + " host-visible (" + budget.source() +
                "). Nothing was uploaded; use a smaller weight format (q8_0, q4_0), fewer tokens or a larger device");
}

}  // namespace vkf
