#include "apps/run/distributed.hpp"

#include "apps/common/app_main.hpp"
#include "apps/common/rank_plan.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/run/report.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/dist/batch_pipeline.hpp"
#include "host/dist/channel.hpp"
#include "host/dist/handshake.hpp"
#include "host/dist/test_fault.hpp"
#include "host/model/layer_range.hpp"
#include "host/model/weights.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vkf::run_cli {

namespace {

// What rank 0 decides for every rank once the handshake agrees.
struct Plan {
    std::vector<LayerRange> layers;  // per rank
    RunSize size;
};

std::string plan_text(const Plan& p) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const LayerRange& r : p.layers) {
        layers.push_back({r.begin, r.end});
    }
    const RunSize& s = p.size;
    return json_text({{"layers", layers},
                      {"max_tokens", s.max_tokens},
                      {"prompt_tokens", s.prompt_tokens},
                      {"window", s.window},
                      {"sequences", s.sequences},
                      {"sequence_tokens", s.sequence_tokens},
                      {"chunk", s.chunk}},
                     JsonStyle::Compact);
}

Plan parse_plan(const std::string& text) {
    try {
        const auto j = nlohmann::json::parse(text);
        Plan p{.size = {.max_tokens = j.at("max_tokens"),
                        .prompt_tokens = j.at("prompt_tokens"),
                        .window = j.at("window"),
                        .sequences = j.at("sequences"),
                        .sequence_tokens = j.at("sequence_tokens"),
                        .chunk = j.at("chunk")}};
        for (const auto& r : j.at("layers")) {
            p.layers.push_back({r.at(0).get<std::uint32_t>(), r.at(1).get<std::uint32_t>()});
        }
        return p;
    } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("rank 0's plan is not one: {}", e.what()));
    }
}

// The options every stage must share: they shape each stage's work and its memory.
std::string shared_options(const Options& o) {
    return fmt::format("weights {}, kv {}, chunk {}, ctx {}, window {}, int8 activations {}, unfused {}",
                       o.weights ? to_string(*o.weights) : std::string("as stored"), o.kv.name(), o.chunk, o.ctx,
                       o.window ? fmt::format("{}", *o.window) : std::string("the model's"), o.int8_activations,
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

// This rank's stage Batch, as make_front makes rank 0's.
BatchOptions stage_options(const Options& o, const Plan& plan, int ranks) {
    return stage_batch_options(run_batch_options(o, plan.size), static_cast<std::uint32_t>(ranks));
}

std::unique_ptr<Model> load_stage(Context& ctx, dist::Channel& channel, const Options& o, const Plan& plan) {
    const LayerRange range = plan.layers.at(static_cast<std::size_t>(channel.rank()));
    ModelOptions options{.weights = o.weights,
                         .check_finite_weights = !o.skip_weight_check,
                         .session = {.max_tokens = plan.size.max_tokens,
                                     .chunk = plan.size.chunk,
                                     .kv_dtype = o.kv.dense,
                                     .kv_k_quant = o.kv.k_quant(),
                                     .kv_v_quant = o.kv.v_quant(),
                                     .window = plan.size.window},
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
        plan.layers = plan_layers(o,
                                  {.max_tokens = plan.size.max_tokens,
                                   .chunk = plan.size.chunk,
                                   .kv_dtype = o.kv.dense,
                                   .kv_k_quant = o.kv.k_quant(),
                                   .kv_v_quant = o.kv.v_quant(),
                                   .window = plan.size.window},
                                  all);
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
    if (plan.size.sequences != 0) {
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
    if (plan.size.sequences != 0) {
        const PipelineStats p = front.pipeline();
        text += fmt::format("pipeline: {} steps, {} overlapped, at most {} in flight\n", p.steps, p.overlapped,
                            p.max_in_flight);
    }
    text += fmt::format("split:   {} steps; per step {:.3f} ms sending, {:.3f} ms waiting for the logits\n",
                        split.steps, split.transfer_ms / steps, split.downstream_ms / steps);
    return text;
}

// Rank 0's stage and the ranks' front over it; the run's size goes to every rank in the
// handshake's plan.
class RankStages : public RunStages {
public:
    RankStages(Context& ctx, dist::Channel& channel, const Options& o) : ctx_(ctx), channel_(channel), options_(o) {}

    void load(const RunSize& size) override {
        loaded_ = agree_and_load(ctx_, channel_, options_, {.size = size});
        Topology topology{.stages = {loaded_.model.get()}, .rank_count = static_cast<std::uint32_t>(channel_.size())};
        topology.ranks = [this](Batch& first) {
            auto front = std::make_unique<dist::RankZeroBatch>(channel_, first);
            ranks_ = front.get();
            return front;
        };
        front_ = make_front(topology, run_batch_options(options_, loaded_.plan.size));
        prepared_ = front_->prepare(loaded_.plan.size.prompt_tokens);
    }
    StageFront& front() override { return *front_; }
    const PreparationStats& prepared() const override { return prepared_; }
    const Model& first() const override { return *loaded_.model; }
    void finish() override {
        channel_.check();
        ranks_->stop();
    }

    nlohmann::ordered_json device_json() const override { return ctx_.device_info(); }
    nlohmann::ordered_json model_json(const Options& o) const override {
        return run_cli::model_json(o, *loaded_.model, loaded_.seconds);
    }
    void announce(const Options&, const std::string&) const override {}  // load_stage said it
    void add_one_prompt_json(OneRun& run) const override {
        run.after_ctx = {{"split", split_json(loaded_.plan, channel_.size(), *ranks_)}};
    }
    std::optional<std::string> load_line() const override { return std::nullopt; }
    std::string one_prompt_text(const Options&) const override {
        return split_text(loaded_.plan, channel_.size(), *ranks_);
    }
    void add_prompt_file_json(const Options&, nlohmann::ordered_json& aggregate,
                              nlohmann::ordered_json& json) const override {
        aggregate["submissions"] = front_->stage(0).stats().submissions;  // stage 0's
        json["split"] = split_json(loaded_.plan, channel_.size(), *ranks_);
    }
    std::string prompt_file_text(const Options& o) const override { return one_prompt_text(o); }

private:
    Context& ctx_;
    dist::Channel& channel_;
    const Options& options_;
    LoadedStage loaded_;
    std::unique_ptr<StageFront> front_;
    dist::RankZeroBatch* ranks_ = nullptr;  // front_'s
    PreparationStats prepared_;
};

int serve(Context& ctx, dist::Channel& channel, const Options& o) {
    const Plan plan = parse_plan(dist::handshake(channel, rank_fingerprint(ctx, o), {}));
    const std::unique_ptr<Model> model = load_stage(ctx, channel, o, plan);
    Batch stage(*model, stage_options(o, plan, channel.size()));
    stage.prepare(stage.sequence_shapes(plan.size.prompt_tokens));
    dist::serve_batch_stage(channel, stage, dist::test_fault(channel.rank()));
    return app::kExitOk;
}

}  // namespace

bool mpi_built() {
    return true;
}

int run_distributed(const Options& o, const std::function<int(RunStages&)>& drive) {
    dist::MpiEnvironment env;
    dist::Channel channel(env, {.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.rank_timeout * 1000)),
                                .signal = [] { return app::stop_signal(); }});
    return app::run_rank("vkf-run", env, channel, [&] {
        Context ctx(o.device.context_options());
        if (env.rank() != 0) {
            return serve(ctx, channel, o);
        }
        RankStages stages(ctx, channel, o);
        return drive(stages);
    });
}

}  // namespace vkf::run_cli
