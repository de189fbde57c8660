// Batch's saved sequences (host/model/sequence_state.hpp): the Scheduler says which blocks
// hold a sequence's keys, the StepExecutor moves their bytes between the device and the host.
#include "host/model/batch.hpp"

#include "base/error.hpp"
#include "host/model/sequence_state.hpp"
#include "host/spec/model_config.hpp"

#include <fmt/format.h>

namespace vkf {

namespace {

void check_whole_model(const Model& model) {
    if (model.layers() != all_layers(model.config())) {
        throw Error(fmt::format("sequence state: this stage holds {}; a state is saved and loaded on one device",
                                describe(model.layers(), model.config())));
    }
}

}  // namespace

StateFingerprint Batch::state_fingerprint(std::uint32_t tokenizer_crc) const {
    const ModelConfig& c = model_.config();
    const BatchOptions& o = options_;
    return StateFingerprint{.family = static_cast<std::uint32_t>(c.family),
                            .vocab_size = c.vocab_size,
                            .hidden = c.hidden,
                            .n_layer = c.n_layer,
                            .n_head = c.n_head,
                            .n_kv_head = c.n_kv_head,
                            .head_dim = c.head_dim,
                            .ffn_hidden = c.ffn_hidden,
                            .weight_dtype = static_cast<std::uint32_t>(model_.weight_format().dense),
                            .weight_quant = static_cast<std::uint32_t>(model_.weight_format().quant),
                            .kv_dtype = static_cast<std::uint32_t>(o.kv_dtype),
                            .kv_k_quant = static_cast<std::uint32_t>(o.kv_k_quant),
                            .kv_v_quant = static_cast<std::uint32_t>(o.kv_v_quant),
                            .block_size = o.block_size,
                            .tokenizer_crc = tokenizer_crc};
}

SequenceState Batch::save_state(SequenceId id, std::uint32_t tokenizer_crc) {
    check_whole_model(model_);
    if (scheduler_.pending(id) != 0) {
        throw Error(fmt::format("sequence state: sequence {} has {} tokens not run yet; save it between steps", id,
                                scheduler_.pending(id)));
    }
    const std::uint32_t computed = scheduler_.position(id);
    if (computed == 0) {
        throw Error(fmt::format("sequence state: sequence {} holds no tokens: there is nothing to save", id));
    }
    const BlockTable& table = scheduler_.table(id);
    std::vector<std::uint32_t> blocks;
    for (std::uint32_t b = 0; b * options_.block_size < computed; ++b) {
        blocks.push_back(table.block(b));
    }
    const std::vector<std::uint32_t>& tokens = scheduler_.tokens(id);
    return SequenceState{.model = state_fingerprint(tokenizer_crc),
                         .tokens = {tokens.begin(), tokens.begin() + computed},
                         .chunk_ends = scheduler_.chunk_ends(id),
                         .kv = executor_.read_kv(blocks)};
}

void Batch::restore_state(SequenceId id, const SequenceState& state) {
    check_whole_model(model_);
    const std::vector<std::uint32_t> blocks = scheduler_.restore(id, state.tokens, state.chunk_ends);
    executor_.write_kv(blocks, state.kv);
}

}  // namespace vkf
