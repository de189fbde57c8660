// vkf-run --devices D,D,... --prompt-file F [--parallel N]: the prompts as sequences of one
// BatchGenerator over a SplitBatch (host/model/split_batch.hpp), so that the devices' stages
// overlap; printed as one device prints them (apps/run/prompt_batch.hpp), plus every stage
// and the pipeline's figures.
#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/run/check.hpp"
#include "apps/run/prompt_batch.hpp"
#include "apps/run/report.hpp"
#include "apps/run/split.hpp"
#include "base/format.hpp"
#include "host/model/split_batch.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>
#include <vector>

namespace vkf::run_cli {

namespace {

// --json's "split": the one-prompt --devices run's shape, with how the stages overlapped.
nlohmann::ordered_json split_json(const SplitModel& split, const SplitBatch& front,
                                  const std::vector<std::unique_ptr<Batch>>& batches,
                                  const std::vector<std::unique_ptr<Context>>& contexts) {
    std::vector<std::uint64_t> stage_bytes;
    for (const auto& batch : batches) {
        stage_bytes.push_back(batch->device_bytes());
    }
    const PipelineStats p = front.pipeline();
    const std::vector<double> busy = front.stage_busy_ms();
    return devices_split_json(split, contexts, stage_bytes, front.split_stats(),
                              {{"steps", p.steps}, {"overlapped", p.overlapped}, {"max_in_flight", p.max_in_flight}},
                              busy);
}

}  // namespace

int run_split_prompt_file(const Options& o) {
    const text::Tokenizer tokenizer = app::load_model_tokenizer(o.model, o.tokenizer);
    const std::vector<Prompt> prompts = tokenize_prompts(o, tokenizer);
    const std::uint32_t block_size = BatchOptions{}.block_size;
    const Sizing sizing = size_batch(o, prompts, block_size);
    const LoadedSplit loaded = load_split(
        o, {.max_tokens = sizing.pool_tokens, .chunk = sizing.chunk, .kv_dtype = o.kv, .window = o.window.value_or(0)});
    const SplitModel& split = *loaded.split;
    const ModelConfig& config = split.config();
    const Model& first = *split.stages().front();
    const std::uint32_t window = app::run_window(o.window, config);
    const auto stages = static_cast<std::uint32_t>(split.stages().size());

    // Every stage's Batch alike; a step runs at most sequences / stages of them, so that the
    // running sequences form groups that follow each other down the stages (as under mpirun).
    BatchOptions options = prompt_batch_options(o, sizing, window);
    options.max_sequences = (sizing.sequences + stages - 1) / stages;
    std::vector<std::unique_ptr<Batch>> batches;
    std::vector<Batch*> pointers;
    std::uint64_t weight_bytes = 0;
    for (std::size_t i = 0; i < split.stages().size(); ++i) {
        const Model& m = *split.stages()[i];
        batches.push_back(std::make_unique<Batch>(m, options));
        pointers.push_back(batches.back().get());
        weight_bytes += m.weights().bytes;
        if (!o.quiet) {
            fmt::print(stderr, "stage {}: {}, {} weights ({}), {} KV cache and activations, on {}\n", i,
                       describe(m.layers(), config), size_text(m.weights().bytes), to_string(m.weight_format()),
                       size_text(batches.back()->device_bytes()), loaded.contexts[i]->device_info().name);
        }
    }
    // Destroyed (its workers joined) before the Batches it drives.
    SplitBatch front(pointers);
    const std::vector<std::uint32_t> stop_ids = o.ignore_eos ? std::vector<std::uint32_t>{} : config.eos_token_ids;
    PromptRuns runs = run_prompts(front, o, tokenizer, prompts, sizing, stop_ids);

    // The first stage knows the checkpoint.
    const bool check_failed = check_prompts(o, first, prompts, runs, window);
    const int status = check_failed ? app::kExitCheckFailed : app::kExitOk;

    if (o.json) {
        nlohmann::ordered_json aggregate = aggregate_json(prompts, runs, front.blocks(), block_size);
        aggregate["submissions"] = batches.front()->stats().submissions;  // stage 0's
        nlohmann::ordered_json model = model_json(o, first, loaded.seconds);
        model["weight_bytes"] = weight_bytes;  // all stages': a tied embedding is held twice
        nlohmann::ordered_json json = prompt_file_json(o, "devices", devices_json(loaded.contexts), std::move(model),
                                                       prompts, sizing, runs, std::move(aggregate));
        json["split"] = split_json(split, front, batches, loaded.contexts);
        fmt::print("{}\n", json_text(json));
        return status;
    }

    print_prompt_file(o, prompts, sizing, runs, front.blocks(), block_size, first);
    const PipelineStats p = front.pipeline();
    const SplitStats moved = front.split_stats();
    std::vector<std::string> busy;
    for (const double ms : front.stage_busy_ms()) {
        busy.push_back(fmt::format("{:.3f}", ms / 1000));
    }
    fmt::print("pipeline: {} steps over {} devices, {} overlapped, at most {} in flight; stages busy {} s\n", p.steps,
               stages, p.overlapped, p.max_in_flight, fmt::join(busy, " | "));
    fmt::print("split:   {} hand-offs of hidden rows, {} through host memory in {:.3f} s\n", moved.hand_offs,
               size_text(moved.transfer_bytes), moved.transfer_ms / 1000);
    if (check_failed) {
        print_prompts_check_failed(o);
    }
    return status;
}

}  // namespace vkf::run_cli
