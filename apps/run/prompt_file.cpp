// vkf-run --prompt-file: every line a prompt of its own, --parallel of them generating at once
// as sequences of one BatchGenerator over the front of whichever topology runs them
// (continuous batching: a queued prompt joins as soon as one finishes; over a split the
// stages overlap), each with its own sampling seed (--seed + its index) and stop conditions,
// so that what a prompt generates does not depend on the others. The completions are printed
// in the file's order, each labelled with its line, then the batch's figures.
#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/run/prompt_batch.hpp"
#include "apps/run/report.hpp"
#include "apps/run/stages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace vkf::run_cli {

std::int32_t run_prompt_file(RunStages& stages, const Options& o) {
    const text::Tokenizer tokenizer = app::load_model_tokenizer(o.model, o.tokenizer);
    const std::vector<Prompt> prompts = tokenize_prompts(o, tokenizer);
    const std::uint32_t block_size = BatchOptions{}.block_size;
    const Sizing sizing = size_batch(o, prompts, block_size);
    const ModelConfig config = read_model_config(o.model);
    std::uint32_t longest = 0;
    for (const Prompt& p : prompts) {
        longest = std::max(longest, static_cast<std::uint32_t>(p.ids.size()));
    }
    const std::uint32_t window = app::run_window(o.window, config);
    stages.load({.max_tokens = sizing.pool_tokens,
                 .prompt_tokens = longest,
                 .window = window,
                 .sequences = sizing.sequences,
                 .sequence_tokens = sizing.sequence_tokens,
                 .chunk = sizing.chunk});
    stages.announce(o, fmt::format("{} sequences,", sizing.sequences));
    const std::vector<std::uint32_t> stop_ids = o.ignore_eos ? std::vector<std::uint32_t>{} : config.eos_token_ids;
    BatchFront& front = stages.front().front();
    PromptRuns runs = run_prompts(front, o, tokenizer, prompts, sizing, stop_ids);
    stages.finish();

    // Stage 0 knows the checkpoint.
    const bool check_failed = check_prompts(o, stages.first(), prompts, runs, window);
    const int status = check_failed ? app::kExitCheckFailed : app::kExitOk;
    if (o.json) {
        nlohmann::ordered_json aggregate = aggregate_json(prompts, runs, front.blocks(), block_size);
        nlohmann::ordered_json json = prompt_file_json(o, stages.device_key(), stages.device_json(),
                                                       stages.model_json(o), prompts, sizing, runs, {});
        stages.add_prompt_file_json(o, aggregate, json);
        json["aggregate"] = std::move(aggregate);
        fmt::print("{}\n", json_text(json));
        return status;
    }
    print_prompt_file(o, prompts, sizing, runs, front.blocks(), block_size, stages.first());
    fmt::print("{}", stages.prompt_file_text(o));
    if (check_failed) {
        print_prompts_check_failed(o);
    }
    return status;
}

}  // namespace vkf::run_cli
