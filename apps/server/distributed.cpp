// vkf-server under mpirun: rank 0 serves HTTP over a RankZeroBatch, the other ranks their
// stages (apps/server/ranks.hpp).
#include "apps/common/app_main.hpp"
#include "apps/server/ranks.hpp"
#include "host/dist/batch_pipeline.hpp"
#include "host/dist/channel.hpp"
#include "host/dist/handshake.hpp"
#include "host/dist/test_fault.hpp"
#include "host/io/json.hpp"
#include "runtime/context.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <atomic>
#include <chrono>
#include <csignal>
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
                       o.weights ? to_string(*o.weights) : std::string("as stored"), to_string(o.kv), o.chunk,
                       o.ctx ? std::to_string(*o.ctx) : std::string("default"),
                       o.ctx_blocks ? std::to_string(*o.ctx_blocks) : std::string("default"),
                       o.window ? std::to_string(*o.window) : std::string("the model's"), o.parallel);
}

// The layers evenly over the ranks, the first ones one more where they do not divide.
std::string even_plan(const ModelConfig& config, std::uint32_t ranks) {
    if (config.n_layer < ranks) {
        throw Error(fmt::format("the model's {} layers cannot be split over {} MPI ranks (each runs at least one)",
                                config.n_layer, ranks));
    }
    std::vector<std::uint32_t> counts;
    for (std::uint32_t r = 0; r < ranks; ++r) {
        counts.push_back(config.n_layer / ranks + (r < config.n_layer % ranks ? 1 : 0));
    }
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const LayerRange& range : split_layers(config, counts)) {
        layers.push_back({range.begin, range.end});
    }
    return json_text(layers, JsonStyle::Compact);
}

LayerRange rank_layers(const std::string& plan, int rank) {
    try {
        const auto j = nlohmann::json::parse(plan).at(static_cast<std::size_t>(rank));
        return {j.at(0).get<std::uint32_t>(), j.at(1).get<std::uint32_t>()};
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("rank 0's plan is not one: ") + e.what());
    }
}

LayerRange handshake(dist::Channel& channel, const Options& o, const ModelConfig& config) {
    const std::string plan = dist::handshake(channel, dist::fingerprint(o.model, "even", shared_options(o)),
                                             [&](std::span<const dist::Fingerprint>) {
                                                 return even_plan(config, static_cast<std::uint32_t>(channel.size()));
                                             });
    return rank_layers(plan, channel.rank());
}

class Front : public RankZero {
public:
    Front(dist::Channel& channel, const Options& o) : channel_(channel), options_(o) {}
    ~Front() override {
        stop_ = true;
        if (watcher_.joinable()) {
            watcher_.join();
        }
    }
    std::uint32_t ranks() const override { return static_cast<std::uint32_t>(channel_.size()); }
    LayerRange layers(const ModelConfig& config, const SessionSize&, const Context&) override {
        return handshake(channel_, options_, config);
    }
    BatchFront& front(Batch& stage) override {
        batch_.emplace(channel_, stage);
        return *batch_;
    }
    void watch(std::function<void()> stop) override {
        watcher_ = std::thread([this, stop = std::move(stop)] {
            while (!stop_) {
                try {
                    channel_.check();
                } catch (const dist::RankFailure&) {
                    stop();  // the engine's requests fail on their own; finish() throws it
                    return;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        });
    }
    void finish() override {
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
    std::optional<dist::RankZeroBatch> batch_;
    std::atomic<bool> stop_ = false;
    std::thread watcher_;
};

int serve_stage(dist::Channel& channel, const Options& o) {
    const ModelConfig config = read_model_config(std::filesystem::path(o.model) / "config.json");
    const DecoderSetup setup = decoder_setup(o, config, static_cast<std::uint32_t>(channel.size()));
    ModelOptions model_options = setup.model;
    model_options.layers = handshake(channel, o, config);
    // Between uploads: a peer's failure ends the load early.
    model_options.progress = [&channel](const WeightUploadProgress&) { channel.check(); };
    Context ctx(o.device.context_options());
    const Model model(ctx, o.model, model_options);
    Batch batch(model, setup.batch);
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
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    // The other ranks ignore them too: mpirun passes its SIGTERM to every rank, and they stop
    // when rank 0 stops serving and says so (or when it is gone: the channel notices).
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    dist::MpiEnvironment env;
    const int rank = env.rank();
    dist::Channel channel(env,
                          {.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.rank_timeout * 1000))});
    // A failed run prints its error here: every rank prints before any exits, and none
    // reaches MPI_Finalize, which would wait for a dead rank (as vkf-run, apps/run/distributed.cpp).
    const auto failed = [&](const std::string& message, bool usage) {
        env.abandon();
        if (usage) {
            fmt::print(stderr, "vkf-server: {} (see vkf-server --help)\n", message);
        } else {
            fmt::print(stderr, "vkf-server: error: rank {} of {}: {}\n", rank, env.size(), message);
        }
        std::fflush(stderr);
        std::this_thread::sleep_for(dist::kFailureGrace);
        return usage ? app::kExitUsage : app::kExitFailure;
    };
    try {
        if (rank != 0) {
            return serve_stage(channel, o);
        }
        Front front(channel, o);
        return serve(o, &front);
    } catch (const dist::RankFailure& e) {
        return failed(e.what(), false);
    } catch (const app::UsageError& e) {
        channel.fail_self(e.what());
        return failed(e.what(), true);
    } catch (const std::exception& e) {
        channel.fail_self(e.what());
        return failed(e.what(), false);
    }
}

}  // namespace vkf::server
