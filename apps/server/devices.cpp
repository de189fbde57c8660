// vkf-server --devices D,D,... [--split auto|N,N]: the decoder split by layers over several
// devices of this process (apps/server/ranks.hpp). serve() loads the first stage on its
// Context (the first device); this loads the later stages on their own Contexts and makes
// the front over all (make_front: a SplitBatch, which pipelines the steps).
#include "apps/common/stop_signals.hpp"
#include "apps/server/ranks.hpp"
#include "base/error.hpp"
#include "host/model/batch.hpp"
#include "host/model/split_batch.hpp"
#include "host/model/split_model.hpp"
#include "runtime/context.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

namespace vkf::server {

namespace {

class DeviceStages : public SplitStages {
public:
    explicit DeviceStages(const Options& o) : options_(o) {
        // The first device is serve()'s Context; the later ones are opened here, one Context
        // each, the same device named twice opened twice.
        for (std::size_t i = 1; i < o.devices.size(); ++i) {
            ContextOptions options = o.device.context_options();
            options.device = o.devices[i];
            contexts_.push_back(std::make_unique<Context>(options));
        }
    }
    std::uint32_t stages() const override { return static_cast<std::uint32_t>(options_.devices.size()); }
    LayerRange layers(const ModelConfig& config, const SessionSize& session, const Context& first) override {
        model_options_ = decoder_setup(options_, config, stages()).model;
        model_options_.session = session;
        std::vector<const Context*> all{&first};
        for (const auto& ctx : contexts_) {
            all.push_back(ctx.get());
        }
        ranges_ = plan_split(all, options_.model, split_counts(options_), model_options_);
        return ranges_.front();
    }
    std::unique_ptr<StageFront> front(const Model& first, const BatchOptions& options) override {
        Topology topology{.stages = {&first}};
        for (std::size_t i = 1; i < ranges_.size(); ++i) {
            ModelOptions model = model_options_;
            model.layers = ranges_[i];
            models_.push_back(std::make_unique<Model>(*contexts_[i - 1], options_.model, model));
            topology.stages.push_back(models_.back().get());
        }
        if (!options_.quiet) {
            const ModelConfig& config = first.config();
            fmt::print(stderr, "vkf-server: stage 0: {}\n", describe(ranges_.front(), config));
            for (std::size_t i = 1; i < ranges_.size(); ++i) {
                fmt::print(stderr, "vkf-server: stage {}: {} on {}\n", i, describe(ranges_[i], config),
                           contexts_[i - 1]->device_info().name);
            }
        }
        return make_front(topology, options);
    }
    void watch(std::function<void(const std::string&)>) override {}  // a stage's error fails the engine's step
    void finish(StageFront& front) override {
        const auto& split = dynamic_cast<const SplitBatch&>(front.front());
        const PipelineStats p = split.pipeline();
        const SplitStats moved = split.split_stats();
        if (!options_.quiet) {
            fmt::print(stderr,
                       "vkf-server: pipeline: {} steps over {} devices, {} overlapped, at most {} in flight; "
                       "{} hand-offs of hidden rows in {:.1f} ms\n",
                       p.steps, stages(), p.overlapped, p.max_in_flight, moved.hand_offs, moved.transfer_ms);
        }
    }

private:
    const Options& options_;
    ModelOptions model_options_;
    std::vector<LayerRange> ranges_;
    std::vector<std::unique_ptr<Context>> contexts_;
    std::vector<std::unique_ptr<Model>> models_;  // the later stages': outlive serve()'s front
};

}  // namespace

int serve_devices(const Options& o) {
    // serve() leaves SIGINT and SIGTERM to its signal thread: the drivers' threads the later
    // stages' Contexts start here, before serve(), must not take them either.
    app::block_stop_signals();
    DeviceStages stages(o);
    ContextOptions first = o.device.context_options();
    first.device = o.devices.front();
    return serve(o, &stages, first);
}

}  // namespace vkf::server
