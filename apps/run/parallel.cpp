#include "apps/run/parallel.hpp"

#include "apps/common/model_tokenizer.hpp"
#include "apps/run/check.hpp"
#include "apps/run/load.hpp"
#include "apps/run/prompt_batch.hpp"
#include "apps/run/report.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>

#include <vector>

namespace vkf::run_cli {

int run_prompt_file(Context& ctx, const Options& o) {
    const text::Tokenizer tokenizer = app::load_model_tokenizer(o.model, o.tokenizer);
    const std::vector<Prompt> prompts = tokenize_prompts(o, tokenizer);
    const std::uint32_t block_size = BatchOptions{}.block_size;
    const Sizing sizing = size_batch(o, prompts, block_size);
    const LoadedModel loaded = load_model(ctx, o,
                                          {.max_tokens = sizing.pool_tokens,
                                           .chunk = sizing.chunk,
                                           .kv_dtype = o.kv.dense,
                                           .kv_k_quant = o.kv.k_quant(),
                                           .kv_v_quant = o.kv.v_quant()});
    const Model& model = *loaded.model;
    const std::vector<std::uint32_t> stop_ids =
        o.ignore_eos ? std::vector<std::uint32_t>{} : model.config().eos_token_ids;
    const std::uint32_t window = app::run_window(o.window, model.config());

    Batch batch(model, prompt_batch_options(o, sizing, window));
    print_model_line(ctx, model, o, batch.device_bytes(), fmt::format("{} sequences,", sizing.sequences).c_str());
    PromptRuns runs = run_prompts(batch, o, tokenizer, prompts, sizing, stop_ids);

    const bool check_failed = check_prompts(o, model, prompts, runs, window);
    const int status = check_failed ? app::kExitCheckFailed : app::kExitOk;

    if (o.json) {
        nlohmann::ordered_json aggregate = aggregate_json(prompts, runs, batch.blocks(), block_size);
        const SessionStats& stats = batch.stats();
        aggregate["submissions"] = stats.submissions;
        aggregate["gpu_seconds"] = stats.gpu_ms / 1000.0;
        nlohmann::ordered_json json =
            prompt_file_json(o, "device", ctx.device_info(), model_json(o, model, loaded.seconds), prompts, sizing,
                             runs, std::move(aggregate));
        json["batch_device_bytes"] = batch.device_bytes();
        add_memory_json(json, ctx);
        if (o.profile) {
            json["profile"] = profile_json(batch.profile());
        }
        fmt::print("{}\n", json_text(json));
        return status;
    }

    print_prompt_file(o, prompts, sizing, runs, batch.blocks(), block_size, model);
    if (o.profile) {
        print_profile(batch.profile(), batch.stats().submissions);
    }
    if (check_failed) {
        print_prompts_check_failed(o);
    }
    return status;
}

}  // namespace vkf::run_cli
