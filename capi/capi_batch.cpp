// The C API's batches: many generations at once over one Batch (continuous batching).
#include "capi/capi_internal.hpp"

#include <fmt/format.h>

#include <deque>

namespace vkf::capi {
namespace {

constexpr std::size_t kBatchParamsV1 = VKF_V1_SIZE(vkf_batch_params, share_prefixes);

}  // namespace
}  // namespace vkf::capi

struct vkf_batch {
    std::shared_ptr<vkf::capi::ModelState> model;  // first: outlives the batch
    std::unique_ptr<vkf::Batch> batch;
    std::unique_ptr<vkf::BatchGenerator> generator;  // after the batch: destroyed before it
    std::map<vkf::SequenceId, std::unique_ptr<vkf::capi::TokenSink>> sinks;
    std::set<vkf::SequenceId> cancelled;  // by vkf_batch_cancel
    std::deque<vkf_batch_event> ended;    // not yet handed out
    // Per generation until its end is handed out: its prompt tokens taken from others.
    std::map<vkf::SequenceId, std::uint32_t> cached;
};

using namespace vkf::capi;

namespace {

constexpr const char* kBatch = "vkf_batch";

}  // namespace

extern "C" {

VKF_API vkf_status vkf_batch_create(vkf_model* model, const vkf_batch_params* params, vkf_batch** out) {
    return guarded(__func__, [&] {
        vkf_model& m = live(model, Kind::Model, "vkf_model");
        out_ptr(out, "out");
        const vkf_batch_params p = read_params(params, vkf_batch_default_params(), kBatchParamsV1, "params");
        check_cache_tokens(p.max_tokens, "params.max_tokens");
        vkf::BatchOptions options;
        options.max_tokens = p.max_tokens;
        options.max_sequence_tokens = p.max_sequence_tokens;
        if (p.max_sequences != 0) {
            options.max_sequences = p.max_sequences;
        }
        if (p.chunk != 0) {
            options.chunk = p.chunk;
        }
        apply_kv_params(p, options);
        options.share_prefixes = p.share_prefixes != 0;
        options.cache_prefixes = p.prefix_cache != 0;
        auto handle = std::make_unique<vkf_batch>();
        handle->model = m.state;
        handle->batch = std::make_unique<vkf::Batch>(*m.state->model, options);
        handle->generator = std::make_unique<vkf::BatchGenerator>(*handle->batch);
        register_handle(handle.get(), Kind::Batch);
        *out = handle.release();
    });
}

VKF_API vkf_status vkf_batch_free(vkf_batch* batch) {
    return guarded(__func__, [&] {
        if (batch != nullptr) {
            unregister_handle(batch, Kind::Batch, kBatch);
            delete batch;
        }
    });
}

VKF_API vkf_status vkf_batch_submit(vkf_batch* batch, const uint32_t* prompt, size_t n_prompt,
                                    const vkf_generate_params* params, uint64_t* sequence) {
    return guarded(__func__, [&] {
        const InUse in_use(batch, Kind::Batch, kBatch);
        vkf_batch& b = *batch;
        out_ptr(sequence, "sequence");
        require(prompt != nullptr || n_prompt == 0, "prompt is NULL");
        require(n_prompt > 0, "the prompt has no tokens");
        GenerateSettings settings = generate_settings(params, b.model->model->config());
        auto sink = std::make_unique<TokenSink>(settings.params);
        TokenSink* raw = sink.get();
        settings.options.on_token = [raw](std::uint32_t, std::uint32_t id) { return raw->push(id); };
        const vkf::SequenceId id = b.generator->submit(std::span(prompt, n_prompt), std::move(settings.options));
        b.sinks[id] = std::move(sink);
        b.cached[id] = b.batch->shared_prefix(id);
        *sequence = id;
    });
}

VKF_API vkf_status vkf_batch_cancel(vkf_batch* batch, uint64_t sequence) {
    return guarded(__func__, [&] {
        const InUse in_use(batch, Kind::Batch, kBatch);
        vkf_batch& b = *batch;
        require(b.sinks.contains(sequence), "no running generation " + fmt::to_string(sequence));
        b.generator->cancel(sequence);
        b.cancelled.insert(sequence);
    });
}

VKF_API vkf_status vkf_batch_step(vkf_batch* batch, vkf_batch_event* ended, size_t capacity, size_t* n_ended) {
    return guarded(__func__, [&] {
        const InUse in_use(batch, Kind::Batch, kBatch);
        vkf_batch& b = *batch;
        require(ended != nullptr || capacity == 0, "ended is NULL with a capacity");
        out_ptr(n_ended, "n_ended");
        if (b.generator->busy()) {
            for (auto& [id, result] : b.generator->step()) {
                const auto sink = b.sinks.find(id);
                vkf_batch_event event{};
                event.sequence = id;
                event.n_prompt_tokens = result.prompt_tokens;
                event.n_tokens = static_cast<std::uint32_t>(result.tokens.size());
                if (sink != b.sinks.end()) {
                    sink->second->finish();
                    event.stop =
                        b.cancelled.erase(id) != 0 ? VKF_STOP_CANCELLED : sink->second->stop_reason(result.stop);
                    b.sinks.erase(sink);
                }
                b.ended.push_back(event);
            }
        }
        std::size_t n = 0;
        while (n < capacity && !b.ended.empty()) {
            ended[n++] = b.ended.front();
            b.cached.erase(b.ended.front().sequence);
            b.ended.pop_front();
        }
        *n_ended = n;
    });
}

VKF_API vkf_status vkf_batch_pending(const vkf_batch* batch, size_t* count) {
    return guarded(__func__, [&] {
        check_not_elsewhere(batch, Kind::Batch, kBatch);
        const vkf_batch& b = *batch;
        *out_ptr(count, "count") = b.sinks.size() + b.ended.size();
    });
}

VKF_API vkf_status vkf_batch_cached_tokens(const vkf_batch* batch, uint64_t sequence, uint32_t* n_cached) {
    return guarded(__func__, [&] {
        check_not_elsewhere(batch, Kind::Batch, kBatch);
        out_ptr(n_cached, "n_cached");
        const auto it = batch->cached.find(sequence);
        require(it != batch->cached.end(), fmt::format("no generation {} running or unreported", sequence));
        *n_cached = it->second;
    });
}

}  // extern "C"
