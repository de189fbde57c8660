#include "apps/run/distributed.hpp"

#include "apps/common/model_tokenizer.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/common/rank_plan.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/common/streamed_text.hpp"
#include "apps/common/text_source.hpp"
#include "apps/run/prompt_batch.hpp"
#include "apps/run/report.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/dist/batch_pipeline.hpp"
#include "host/dist/channel.hpp"
#include "host/dist/handshake.hpp"
#include "host/dist/test_fault.hpp"
#include "host/io/npy.hpp"
#include "host/model/batch_session.hpp"
#include "host/model/generation.hpp"
#include "host/model/layer_range.hpp"
#include "host/model/weights.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::run_cli {

namespace {

// What rank 0 decides for every rank once the handshake agrees.
struct Plan {
    std::vector<LayerRange> layers;  // per rank
    std::uint32_t max_tokens = 0;
    std::uint32_t prompt_tokens = 0;
    std::uint32_t window = 0;
    // --prompt-file: the sequences running at once and the most tokens of each (sequences 0:
    // one prompt, a Session's Batch).
    std::uint32_t sequences = 0;
    std::uint32_t sequence_tokens = 0;
    std::uint32_t chunk = 0;  // rows per step
};

std::string plan_text(const Plan& p) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const LayerRange& r : p.layers) {
        layers.push_back({r.begin, r.end});
    }
    return json_text({{"layers", layers},
                      {"max_tokens", p.max_tokens},
                      {"prompt_tokens", p.prompt_tokens},
                      {"window", p.window},
                      {"sequences", p.sequences},
                      {"sequence_tokens", p.sequence_tokens},
                      {"chunk", p.chunk}},
                     JsonStyle::Compact);
}

Plan parse_plan(const std::string& text) {
    try {
        const auto j = nlohmann::json::parse(text);
        Plan p{.max_tokens = j.at("max_tokens"),
               .prompt_tokens = j.at("prompt_tokens"),
               .window = j.at("window"),
               .sequences = j.at("sequences"),
               .sequence_tokens = j.at("sequence_tokens"),
               .chunk = j.at("chunk")};
        for (const auto& r : j.at("layers")) {
            p.layers.push_back({r.at(0).get<std::uint32_t>(), r.at(1).get<std::uint32_t>()});
        }
        return p;
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("rank 0's plan is not one: ") + e.what());
    }
}

// The options every stage must share: they shape each stage's work and its memory.
std::string shared_options(const Options& o) {
    return fmt::format("weights {}, kv {}, chunk {}, ctx {}, window {}, int8 activations {}, unfused {}",
                       o.weights ? to_string(*o.weights) : std::string("as stored"), to_string(o.kv), o.chunk, o.ctx,
                       o.window ? fmt::to_string(*o.window) : std::string("the model's"), o.int8_activations,
                       o.unfused);
}

// --split's layers: the counts given, or "auto": by each rank's memory budget (ranks on one
// device share it), as `vkf-run --devices` divides them over devices.
std::vector<LayerRange> plan_layers(const Options& o, const SessionSize& session,
                                    std::span<const dist::Fingerprint> by_rank) {
    return app::plan_rank_layers({.model = o.model, .split = o.split, .weights = o.weights, .session = session},
                                 by_rank);
}

dist::Fingerprint rank_fingerprint(const Context& ctx, const Options& o) {
    return app::rank_fingerprint(ctx, o.model, o.split, shared_options(o));
}

std::vector<std::string> layers_text(const Plan& p) {
    std::vector<std::string> parts;
    for (const LayerRange& r : p.layers) {
        parts.push_back(fmt::format("{}..{}", r.begin, r.end - 1));
    }
    return parts;
}

SessionOptions session_options(const Options& o, const Plan& plan) {
    return run_cli::session_options(o, plan.max_tokens, plan.chunk, plan.window);
}

// Every rank's stage Batch: a Session's for one prompt, --prompt-file's for several. Those
// run in `ranks` groups of at most sequences / ranks a step: while one group's step is on a
// later rank, stage 0 runs the next group's (RankZeroBatch), so every rank has work.
BatchOptions stage_batch_options(const Options& o, const Plan& plan, int ranks) {
    if (plan.sequences == 0) {
        return session_batch_options(session_options(o, plan));
    }
    BatchOptions options = prompt_batch_options(o,
                                                {.sequences = plan.sequences,
                                                 .sequence_tokens = plan.sequence_tokens,
                                                 .pool_tokens = plan.max_tokens,
                                                 .chunk = plan.chunk},
                                                plan.window);
    options.max_sequences =
        (plan.sequences + static_cast<std::uint32_t>(ranks) - 1) / static_cast<std::uint32_t>(ranks);
    return options;
}

std::unique_ptr<Model> load_stage(Context& ctx, dist::Channel& channel, const Options& o, const Plan& plan) {
    const LayerRange range = plan.layers.at(static_cast<std::size_t>(channel.rank()));
    ModelOptions options{
        .weights = o.weights,
        .check_finite_weights = !o.skip_weight_check,
        .session = {.max_tokens = plan.max_tokens, .chunk = plan.chunk, .kv_dtype = o.kv, .window = plan.window},
        .layers = range};
    // Between uploads: a peer's failure ends the load early.
    options.progress = [&channel](const WeightUploadProgress&) { channel.check(); };
    auto model = std::make_unique<Model>(ctx, o.model, options);
    if (!o.quiet) {
        fmt::print(stderr, "vkf-run: rank {} of {}: {} ({} of weights) on {}\n", channel.rank(), channel.size(),
                   describe(range, model->config()), size_text(model->weights().bytes), ctx.device_info().name);
    }
    return model;
}

struct LoadedStage {
    Plan plan;  // rank 0's, as every rank agreed
    std::unique_ptr<Model> model;
    double seconds = 0.0;
};

// Rank 0: the handshake, whose plan is `plan` with the layers of every rank, then its layers.
LoadedStage agree_and_load(Context& ctx, dist::Channel& channel, const Options& o, Plan plan) {
    plan = parse_plan(dist::handshake(channel, rank_fingerprint(ctx, o), [&](std::span<const dist::Fingerprint> all) {
        plan.layers = plan_layers(
            o, {.max_tokens = plan.max_tokens, .chunk = plan.chunk, .kv_dtype = o.kv, .window = plan.window}, all);
        return plan_text(plan);
    }));
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<Model> model = load_stage(ctx, channel, o, plan);
    return {std::move(plan), std::move(model),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// --json's "split": the shape `vkf-run --devices` prints too ("mode": "devices"), with the
// ranks' extras; a --prompt-file run adds how the stages overlapped.
nlohmann::ordered_json split_json(const Plan& plan, int ranks, const dist::RankZeroBatch& front) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const LayerRange& r : plan.layers) {
        layers.push_back({r.begin, r.end});
    }
    const dist::RankSplitStats& split = front.traffic();
    nlohmann::ordered_json json = {{"mode", "ranks"},
                                   {"stages", ranks},
                                   {"ranks", ranks},
                                   {"layers", layers},
                                   {"steps", split.steps},
                                   {"messages", split.messages},
                                   {"transfer_bytes", split.transfer_bytes},
                                   {"transfer_ms", split.transfer_ms},
                                   {"hand_offs", split.steps * static_cast<std::uint64_t>(ranks - 1)},
                                   {"downstream_ms", split.downstream_ms}};
    if (plan.sequences != 0) {
        const PipelineStats p = front.pipeline();
        json["overlapped"] = p.overlapped;
        json["max_in_flight"] = p.max_in_flight;
    }
    return json;
}

std::string split_text(const Plan& plan, int ranks, const dist::RankZeroBatch& front) {
    const dist::RankSplitStats& split = front.traffic();
    const double steps = static_cast<double>(std::max<std::uint64_t>(split.steps, 1));
    std::string text = fmt::format("ranks:   {}, layers {}\n", ranks, fmt::join(layers_text(plan), " | "));
    if (plan.sequences != 0) {
        const PipelineStats p = front.pipeline();
        text += fmt::format("pipeline: {} steps, {} overlapped, at most {} in flight\n", p.steps, p.overlapped,
                            p.max_in_flight);
    }
    text += fmt::format("split:   {} steps; per step {:.3f} ms sending, {:.3f} ms waiting for the logits\n",
                        split.steps, split.transfer_ms / steps, split.downstream_ms / steps);
    return text;
}

// --prompt-file under mpirun: the prompts as sequences of one BatchGenerator over rank 0's
// pipelined front, so that the ranks' stages overlap; printed as one device prints them.
int drive_prompts(Context& ctx, dist::Channel& channel, const Options& o) {
    const text::Tokenizer tokenizer = app::load_model_tokenizer(o.model, o.tokenizer);
    const std::vector<Prompt> prompts = tokenize_prompts(o, tokenizer);
    const std::uint32_t block_size = BatchOptions{}.block_size;
    const Sizing sizing = size_batch(o, prompts, block_size);
    const ModelConfig config = read_model_config(o.model);
    std::uint32_t longest = 0;
    for (const Prompt& p : prompts) {
        longest = std::max(longest, static_cast<std::uint32_t>(p.ids.size()));
    }
    const LoadedStage loaded = agree_and_load(ctx, channel, o,
                                              {.max_tokens = sizing.pool_tokens,
                                               .prompt_tokens = longest,
                                               .window = app::run_window(o.window, config),
                                               .sequences = sizing.sequences,
                                               .sequence_tokens = sizing.sequence_tokens,
                                               .chunk = sizing.chunk});
    const Plan& plan = loaded.plan;
    Batch stage(*loaded.model, stage_batch_options(o, plan, channel.size()));
    stage.prepare(stage.sequence_shapes(plan.prompt_tokens));
    dist::RankZeroBatch front(channel, stage);
    const std::vector<std::uint32_t> stop_ids = o.ignore_eos ? std::vector<std::uint32_t>{} : config.eos_token_ids;
    const PromptRuns runs = run_prompts(front, o, tokenizer, prompts, sizing, stop_ids);
    channel.check();
    front.stop();
    if (o.json) {
        nlohmann::ordered_json aggregate = aggregate_json(prompts, runs, front.blocks(), block_size);
        aggregate["submissions"] = stage.stats().submissions;  // stage 0's
        nlohmann::ordered_json json =
            prompt_file_json(o, "device", ctx.device_info(), model_json(o, *loaded.model, loaded.seconds), prompts,
                             sizing, runs, std::move(aggregate));
        json["split"] = split_json(plan, channel.size(), front);
        fmt::print("{}\n", json_text(json));
        return app::kExitOk;
    }
    print_prompt_file(o, prompts, sizing, runs, front.blocks(), block_size, *loaded.model);
    fmt::print("{}", split_text(plan, channel.size(), front));
    return app::kExitOk;
}

int drive(Context& ctx, dist::Channel& channel, const Options& o) {
    if (!o.prompt_file.empty()) {
        return drive_prompts(ctx, channel, o);
    }
    std::optional<text::Tokenizer> tokenizer;
    std::vector<std::uint32_t> prompt = o.prompt;
    if (o.prompt_text) {
        tokenizer = app::load_model_tokenizer(o.model, o.tokenizer);
        app::check_utf8(*o.prompt_text, "--prompt");
        prompt = tokenizer->encode(*o.prompt_text);
        if (prompt.empty()) {
            throw Error("--prompt: the text encodes to no tokens");
        }
    }
    const ModelConfig config = read_model_config(o.model);
    const std::uint64_t wanted = std::uint64_t{prompt.size()} + o.n_predict - 1;
    const std::uint64_t positions = std::min<std::uint64_t>(o.ctx, wanted);
    if (positions > ModelLimits::max_seq_len) {
        throw app::UsageError(fmt::format("--ctx {}: vkformer's sessions hold at most {} positions", positions,
                                          ModelLimits::max_seq_len));
    }
    Plan plan{.max_tokens = static_cast<std::uint32_t>(positions),
              .prompt_tokens = static_cast<std::uint32_t>(prompt.size()),
              .window = app::run_window(o.window, config),
              .chunk = o.chunk};
    if (plan.window == 0 && prompt.size() > plan.max_tokens) {
        throw app::UsageError(fmt::format("a {}-token prompt does not fit the {}-token KV cache (--ctx {})",
                                          prompt.size(), plan.max_tokens, o.ctx));
    }
    LoadedStage loaded = agree_and_load(ctx, channel, o, plan);
    plan = loaded.plan;
    const Model* const model = loaded.model.get();
    const double load_seconds = loaded.seconds;
    // One sequence over the batch protocol every rank mirrors (host/dist/batch_pipeline.hpp):
    // stage 0's Batch as a Session's (session_batch_options), the same on every rank.
    const SessionOptions options = session_options(o, plan);
    Batch stage(*model, session_batch_options(options));
    const PreparationStats prepared = stage.prepare(stage.sequence_shapes(plan.prompt_tokens));
    dist::RankZeroBatch front(channel, stage);
    BatchSession session(front, model->config(), options);

    const std::vector<std::uint32_t> stop_ids = o.ignore_eos ? std::vector<std::uint32_t>{} : config.eos_token_ids;
    GenerationOptions gen{.n_predict = o.n_predict,
                          .sampling = o.sampling,
                          .keep_logits = !o.logits_out.empty(),
                          .stop_ids = stop_ids,
                          .on_prefill = app::prefill_progress(!o.quiet)};
    std::optional<app::StreamedText> streamed;
    if (o.prompt_text) {
        stream_prompt_text(o, *tokenizer, streamed, gen);
    } else {
        auto line = std::make_shared<app::ProgressLine>(!o.quiet);
        gen.on_token = [line, n = o.n_predict](std::uint32_t i, std::uint32_t) {
            line->update(static_cast<double>(i + 1) / n, fmt::format("generating: {} of {} tokens", i + 1, n));
            return app::stop_signal() == 0;
        };
    }
    const GenerationResult result = generate(session, prompt, gen);
    // Ctrl-C (mpirun forwards SIGTERM to every rank): the generation ended at this token, and
    // the ranks, which keep serving for ChannelOptions::signal_grace, are stopped as at the
    // end. Past that grace the signal is this rank's failure (check throws it).
    channel.check();
    front.stop();
    if (streamed) {
        streamed->finish();
        if (!o.json) {
            fmt::print("\n\n");
        }
    }
    if (!o.logits_out.empty()) {
        // Written under a temporary name and renamed (base/files.hpp): never partial.
        const std::size_t shape[] = {result.tokens.size(), config.vocab_size};
        write_npy_f32(o.logits_out, shape, result.logits);
    }
    OneRun run = one_run(prompt, result, streamed, prepared, plan.window, plan.max_tokens);
    run.kv = to_string(o.kv);
    run.device = ctx.device_info();
    run.model = model_json(o, *model, load_seconds);
    run.after_ctx = {{"split", split_json(plan, channel.size(), front)}};
    if (o.json) {
        fmt::print("{}\n", json_text(one_run_json(o, run)));
        return app::kExitOk;
    }
    return print_one_run(o, run, *model, std::nullopt, split_text(plan, channel.size(), front));
}

int serve(Context& ctx, dist::Channel& channel, const Options& o) {
    const Plan plan = parse_plan(dist::handshake(channel, rank_fingerprint(ctx, o), {}));
    const std::unique_ptr<Model> model = load_stage(ctx, channel, o, plan);
    Batch stage(*model, stage_batch_options(o, plan, channel.size()));
    stage.prepare(stage.sequence_shapes(plan.prompt_tokens));
    dist::serve_batch_stage(channel, stage, dist::test_fault(channel.rank()));
    return app::kExitOk;
}

}  // namespace

bool mpi_built() {
    return true;
}

int run_distributed(const Options& o) {
    dist::MpiEnvironment env;
    dist::Channel channel(env, {.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.rank_timeout * 1000)),
                                .signal = [] { return app::stop_signal(); }});
    return app::run_rank("vkf-run", env, channel, [&] {
        Context ctx(o.device.context_options());
        return env.rank() == 0 ? drive(ctx, channel, o) : serve(ctx, channel, o);
    });
}

}  // namespace vkf::run_cli
