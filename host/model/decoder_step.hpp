#pragma once
// Recording one forward step of a decoder from its DecoderPlan: the embedding, every layer,
// and the final norm and head over the rows whose logits are wanted, as one command list
// (a stage of a layer split: its layers, the embedding only on the first, the head only on
// the last).
// What changes from step to step (token ids, positions, the slot of every row in the paged
// KV cache, the sequence table attention reads, the rows whose logits are read back) sits
// in small host-visible buffers written before each submission, so a recorded step is
// submitted again for every later step of the same shape.

#include "host/model/decoder_plan.hpp"
#include "host/model/kv_cache.hpp"

#include <memory>

namespace vkf {

// The buffers a step binds (owned by the StepExecutor): per-step inputs, activations, outputs.
struct StepBuffers {
    const Buffer* ids = nullptr;             // [tokens] uint32
    const Buffer* positions = nullptr;       // [tokens] uint32, MPT's learned positions; may be invalid
    const Buffer* slots = nullptr;           // [tokens] uint32: the cache row of every row's K and V
    const Buffer* sequence_table = nullptr;  // paged_sequence_table() words
    const Buffer* logit_index = nullptr;     // [logit_rows] uint32: the rows gathered for the head
    const Buffer *hidden = nullptr, *normed = nullptr, *qkv = nullptr, *q = nullptr, *attn = nullptr, *mlp = nullptr,
                 *gate = nullptr;
    const Buffer* logit_hidden = nullptr;  // [logit_rows, hidden] fp32: the gathered rows
    const Buffer* logits = nullptr;        // [logit_rows, vocab] fp32, host-visible
    const Buffer* scratch = nullptr;       // DecoderPlan::scratch_bytes, or invalid when 0
};

struct RecordedStep {
    std::unique_ptr<Attention> attention;
    std::unique_ptr<CommandList> list;
};

// The list is left open: StepExecutor finishes it (encoding needs every pipeline made, and a
// preparation records several steps before it waits for their pipelines).
std::unique_ptr<RecordedStep> record_decoder_step(Context& ctx, const Model& model, const DecoderPlan& plan,
                                                  const KvCache& cache, const StepBuffers& buffers, bool profiling);

}  // namespace vkf
