// vkf-server under mpirun: rank 0 serves HTTP over a RankZeroBatch (its SplitStages), the
// other ranks their stages (apps/server/ranks.hpp).
#include "apps/common/app_main.hpp"
#include "apps/common/rank_plan.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/server/ranks.hpp"
#include "base/error.hpp"
#include "host/dist/batch_pipeline.hpp"
#include "host/dist/channel.hpp"
#include "host/dist/handshake.hpp"
#include "host/dist/test_fault.hpp"
#include "host/io/json.hpp"
#include "runtime/context.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace vkf::server {

namespace {

// The options every stage must share (the handshake compares them): they shape each
// stage's work, its KV cache and the batch's ids.
std::string shared_options(const Options& o) {
    return fmt::format("weights {}, kv {}, chunk {}, ctx {}, ctx blocks {}, window {}, parallel {}",
                       o.weights ? to_string(*o.weights) : std::string("as stored"), o.kv.name(), o.chunk,
                       o.ctx ? fmt::to_string(*o.ctx) : std::string("default"),
                       o.ctx_blocks ? fmt::to_string(*o.ctx_blocks) : std::string("default"),
                       o.window ? fmt::to_string(*o.window) : std::string("the model's"), o.parallel);
}

// The handshake (every rank's fingerprint with its device), then rank 0's layers for every
// rank from --split: the counts given, or auto by each rank's budget for its weights and its
// share of this server's KV blocks and activations (`session`, decoder_setup's: its Batch's
// whole pool and sequence tables, batch_session_size; Model's constructor checks the same
// estimate). Logs the plan on rank 0.
LayerRange handshake(dist::Channel& channel, const Options& o, const SessionSize& session, const Context& ctx) {
    std::vector<LayerRange> plan;
    const std::string text = dist::handshake(
        channel, app::rank_fingerprint(ctx, o.model, o.split, shared_options(o)),
        [&](std::span<const dist::Fingerprint> by_rank) {
            plan = app::plan_rank_layers({.model = o.model, .split = o.split, .weights = o.weights, .session = session},
                                         by_rank);
            return json_text(app::layers_json(plan), JsonStyle::Compact);
        });
    if (channel.rank() == 0) {
        std::vector<std::string> parts;
        for (const LayerRange& r : plan) {
            parts.push_back(fmt::format("{}..{}", r.begin, r.end - 1));
        }
        if (!o.quiet) {
            fmt::print(stderr, "vkf-server: layers over {} ranks (--split {}): {}\n", channel.size(),
                       o.split.value_or("auto"), fmt::join(parts, " | "));
        }
        return plan.at(0);
    }
    try {
        const std::vector<LayerRange> all = app::layers_from_json(nlohmann::json::parse(text));
        if (all.size() != static_cast<std::size_t>(channel.size())) {
            throw Error(fmt::format("rank 0's plan has {} ranges for {} ranks", all.size(), channel.size()));
        }
        return all[static_cast<std::size_t>(channel.rank())];
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("rank 0's plan is not JSON: ") + e.what());
    }
}

class RankStages : public SplitStages {
public:
    RankStages(dist::Channel& channel, const Options& o) : channel_(channel), options_(o) {}
    ~RankStages() override {
        stop_ = true;
        if (watcher_.joinable()) {
            watcher_.join();
        }
    }
    std::uint32_t stages() const override { return static_cast<std::uint32_t>(channel_.size()); }
    LayerRange layers(const ModelConfig&, const SessionSize& session, const Context& ctx) override {
        return handshake(channel_, options_, session, ctx);
    }
    std::unique_ptr<StageFront> front(const Model& first, const BatchOptions& options) override {
        Topology topology{.stages = {&first}, .rank_count = stages()};
        topology.ranks = [this](Batch& stage) {
            auto front = std::make_unique<dist::RankZeroBatch>(channel_, stage);
            batch_ = front.get();
            return front;
        };
        return make_front(topology, options);
    }
    void watch(std::function<void(const std::string&)> failed) override {
        watcher_ = std::thread([this, failed = std::move(failed)] {
            while (!stop_) {
                try {
                    channel_.check();
                } catch (const dist::RankFailure& e) {
                    failed(e.what());  // the engine's requests fail on their own; finish() throws it
                    return;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        });
    }
    void interrupted() override { channel_.blame_silent_peer(); }
    void finish(StageFront&) override {
        stop_ = true;
        if (watcher_.joinable()) {
            watcher_.join();
        }
        if (!batch_) {
            return;
        }
        const PipelineStats p = batch_->pipeline();
        if (!options_.quiet) {
            fmt::print(stderr, "vkf-server: pipeline: {} steps over {} ranks, {} overlapped, at most {} in flight\n",
                       p.steps, channel_.size(), p.overlapped, p.max_in_flight);
        }
        batch_->stop();  // throws the failure that ended the run, if any
    }

private:
    dist::Channel& channel_;
    const Options& options_;
    dist::RankZeroBatch* batch_ = nullptr;  // the front's, once made
    std::atomic<bool> stop_ = false;
    std::thread watcher_;
};

int serve_stage(dist::Channel& channel, const Options& o) {
    const ModelConfig config = read_model_config(o.model);
    const DecoderSetup setup = decoder_setup(o, config, static_cast<std::uint32_t>(channel.size()));
    ModelOptions model_options = setup.model;
    // The device first: its budget goes into the handshake, for rank 0's --split auto.
    Context ctx(o.device.context_options());
    model_options.layers = handshake(channel, o, setup.model.session, ctx);
    // Between uploads: a peer's failure ends the load early.
    model_options.progress = [&channel](const WeightUploadProgress&) { channel.check(); };
    const Model model(ctx, o.model, model_options);
    Batch batch(model, stage_batch_options(setup.batch, static_cast<std::uint32_t>(channel.size())));
    batch.prepare(batch.sequence_shapes(o.chunk));
    if (!o.quiet) {
        fmt::print(stderr, "vkf-server: rank {} of {}: {} on {}\n", channel.rank(), channel.size(),
                   describe(*model_options.layers, config), ctx.device_info().name);
    }
    dist::serve_batch_stage(channel, batch, dist::test_fault(channel.rank()));
    return app::kExitOk;
}

}  // namespace

bool mpi_built() {
    return true;
}

int serve_ranks(const Options& o) {
    // Rank 0's serve() leaves SIGINT and SIGTERM to its signal thread: MPI's and the
    // channel's threads, started first, must not take them either.
    // The other ranks ignore them too: mpirun passes its SIGTERM to every rank, and they stop
    // when rank 0 stops serving and says so (or when it is gone: the channel notices).
    app::block_stop_signals();
    dist::MpiEnvironment env;
    dist::Channel channel(env,
                          {.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.rank_timeout * 1000))});
    // Signals are blocked here: a RankFailure is a peer's, and every rank waits out the grace.
    return app::run_rank("vkf-server", env, channel, [&] {
        if (env.rank() != 0) {
            return serve_stage(channel, o);
        }
        RankStages stages(channel, o);
        return serve(o, &stages);
    });
}

}  // namespace vkf::server
