// vkf-run's stages in this process: the whole model on one device, or --devices D,D,...
// [--split auto|N,N]: the layers split over several devices, each stage on its own Context
// (the same device named twice opened twice), pipelined by the SplitBatch make_front makes.
#include "apps/common/progress_line.hpp"
#include "apps/run/load.hpp"
#include "apps/run/prompt_batch.hpp"
#include "apps/run/stages.hpp"
#include "base/format.hpp"
#include "host/model/split_batch.hpp"
#include "host/model/split_model.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <vector>

namespace vkf::run_cli {

BatchOptions run_batch_options(const Options& o, const RunSize& size) {
    if (size.sequences == 0) {
        return session_batch_options(session_options(o, size.max_tokens, size.chunk, size.window));
    }
    return prompt_batch_options(o,
                                {.sequences = size.sequences,
                                 .sequence_tokens = size.sequence_tokens,
                                 .pool_tokens = size.max_tokens,
                                 .chunk = size.chunk},
                                size.window);
}

namespace {

class OneDevice : public RunStages {
public:
    explicit OneDevice(const Options& o) : ctx_(o.device.context_options()), options_(o) {}

    void load(const RunSize& size) override {
        // One prompt's estimate counts --window's ring or the whole --ctx (the model's own
        // window is known once its config is read).
        loaded_ = load_model(ctx_, options_,
                             {.max_tokens = size.max_tokens,
                              .chunk = size.chunk,
                              .kv_dtype = options_.kv.dense,
                              .kv_k_quant = options_.kv.k_quant(),
                              .kv_v_quant = options_.kv.v_quant(),
                              .window = size.sequences == 0 ? options_.window.value_or(0) : 0});
        front_ = make_front({.stages = {loaded_.model.get()}}, run_batch_options(options_, size));
        prepared_ = front_->prepare(size.prompt_tokens);
    }
    StageFront& front() override { return *front_; }
    const PreparationStats& prepared() const override { return prepared_; }
    const Model& first() const override { return *loaded_.model; }

    nlohmann::ordered_json device_json() const override { return ctx_.device_info(); }
    nlohmann::ordered_json model_json(const Options& o) const override {
        return run_cli::model_json(o, *loaded_.model, loaded_.seconds);
    }
    void announce(const Options& o, const std::string& holder) const override {
        print_model_line(ctx_, *loaded_.model, o, batch().device_bytes(), holder.c_str());
    }
    void add_one_prompt_json(OneRun& run) const override {
        run.after_kv = {{"submissions", batch().stats().submissions}, {"session_device_bytes", batch().device_bytes()}};
        run.after_ctx = {{"kv_blocks_in_use", run.blocks_held}};
        add_memory_json(run.after_ctx, ctx_);
    }
    void end_json(const Options& o, nlohmann::ordered_json& json) const override {
        if (o.profile) {
            json["profile"] = profile_json(batch().profile());
        }
    }
    std::optional<std::string> load_line() const override {
        return fmt::format("load:    {} of weights in {:.3f} s", size_text(loaded_.model->weights().bytes),
                           loaded_.seconds);
    }
    std::string one_prompt_text(const Options& o) const override {
        return o.profile ? profile_text(batch().profile(), batch().stats().submissions) : std::string{};
    }
    void add_prompt_file_json(const Options& o, nlohmann::ordered_json& aggregate,
                              nlohmann::ordered_json& json) const override {
        aggregate["submissions"] = batch().stats().submissions;
        aggregate["gpu_seconds"] = batch().stats().gpu_ms / 1000.0;
        json["batch_device_bytes"] = batch().device_bytes();
        add_memory_json(json, ctx_);
        end_json(o, json);
    }
    std::string prompt_file_text(const Options& o) const override { return one_prompt_text(o); }

private:
    const Batch& batch() const { return front_->stage(0); }

    Context ctx_;
    const Options& options_;
    LoadedModel loaded_;
    std::unique_ptr<StageFront> front_;
    PreparationStats prepared_;
};

// One Context per --devices entry, each with --limits and --timeout.
std::vector<std::unique_ptr<Context>> open_devices(const Options& o) {
    std::vector<std::unique_ptr<Context>> contexts;
    for (const std::string& device : o.devices) {
        ContextOptions options = o.device.context_options();
        options.device = device;
        contexts.push_back(std::make_unique<Context>(options));
    }
    return contexts;
}

class DeviceSplit : public RunStages {
public:
    explicit DeviceSplit(const Options& o) : contexts_(open_devices(o)), options_(o) {}

    void load(const RunSize& size) override {
        std::vector<Context*> pointers;
        for (const auto& ctx : contexts_) {
            pointers.push_back(ctx.get());
        }
        const auto start = std::chrono::steady_clock::now();
        ModelOptions options{.weights = options_.weights,
                             .check_finite_weights = !options_.skip_weight_check,
                             .session = {.max_tokens = size.max_tokens,
                                         .chunk = size.chunk,
                                         .kv_dtype = options_.kv.dense,
                                         .kv_k_quant = options_.kv.k_quant(),
                                         .kv_v_quant = options_.kv.v_quant(),
                                         .window = options_.window.value_or(0)}};
        auto line = std::make_shared<app::ProgressLine>(!options_.quiet);
        options.progress = [line](const WeightUploadProgress& p) {
            const int percent = p.total_bytes ? static_cast<int>(100 * p.bytes_done / p.total_bytes) : 100;
            line->update(percent / 100.0,
                         fmt::format("loading a stage's weights: {}% of {}", percent, size_text(p.total_bytes)));
        };
        split_ = std::make_unique<SplitModel>(pointers, options_.model, split_counts(options_), options);
        seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        Topology topology;
        for (const auto& stage : split_->stages()) {
            topology.stages.push_back(stage);
        }
        front_ = make_front(topology, run_batch_options(options_, size));
        prepared_ = front_->prepare(size.prompt_tokens);
    }
    StageFront& front() override { return *front_; }
    const PreparationStats& prepared() const override { return prepared_; }
    const Model& first() const override { return *split_->stages().front(); }

    std::string_view device_key() const override { return "devices"; }
    nlohmann::ordered_json device_json() const override {
        nlohmann::ordered_json devices = nlohmann::ordered_json::array();
        for (const auto& ctx : contexts_) {
            devices.push_back(ctx->device_info());
        }
        return devices;
    }
    nlohmann::ordered_json model_json(const Options& o) const override {
        nlohmann::ordered_json json = run_cli::model_json(o, first(), seconds_);
        json["weight_bytes"] = weight_bytes();  // all stages': a tied embedding is held twice
        return json;
    }
    void announce(const Options& o, const std::string&) const override {
        if (o.quiet) {
            return;
        }
        for (std::size_t i = 0; i < split_->stages().size(); ++i) {
            const Model& m = *split_->stages()[i];
            fmt::print(stderr, "stage {}: {}, {} weights ({}), {} KV cache and activations, on {}\n", i,
                       describe(m.layers(), m.config()), size_text(m.weights().bytes), to_string(m.weight_format()),
                       size_text(front_->stage(i).device_bytes()), contexts_[i]->device_info().name);
        }
    }
    void add_one_prompt_json(OneRun& run) const override {
        run.after_kv = {{"split", split_json(nlohmann::ordered_json::object(), false)}};
    }
    std::optional<std::string> load_line() const override {
        return fmt::format("load:    {} of weights over {} stages in {:.3f} s", size_text(weight_bytes()),
                           contexts_.size(), seconds_);
    }
    std::string one_prompt_text(const Options&) const override {
        const SplitStats moved = pipeline().split_stats();
        return fmt::format("split:   {} hand-offs of hidden rows, {} through host memory in {:.3f} s\n",
                           moved.hand_offs, size_text(moved.transfer_bytes), moved.transfer_ms / 1000);
    }
    void add_prompt_file_json(const Options&, nlohmann::ordered_json& aggregate,
                              nlohmann::ordered_json& json) const override {
        aggregate["submissions"] = front_->stage(0).stats().submissions;  // stage 0's
        const PipelineStats p = pipeline().pipeline();
        json["split"] =
            split_json({{"steps", p.steps}, {"overlapped", p.overlapped}, {"max_in_flight", p.max_in_flight}}, true);
    }
    std::string prompt_file_text(const Options& o) const override {
        const PipelineStats p = pipeline().pipeline();
        std::vector<std::string> busy;
        for (const double ms : pipeline().stage_busy_ms()) {
            busy.push_back(fmt::format("{:.3f}", ms / 1000));
        }
        return fmt::format(
                   "pipeline: {} steps over {} devices, {} overlapped, at most {} in flight; stages busy {} s\n",
                   p.steps, contexts_.size(), p.overlapped, p.max_in_flight, fmt::join(busy, " | ")) +
               one_prompt_text(o);
    }

private:
    const SplitBatch& pipeline() const { return dynamic_cast<const SplitBatch&>(front_->front()); }
    std::uint64_t weight_bytes() const {
        std::uint64_t bytes = 0;
        for (const Model* m : split_->stages()) {
            bytes += m->weights().bytes;
        }
        return bytes;
    }
    // --json's "split" (an MPI run's has the same shape, mode "ranks"): each stage's layers,
    // device, weights and Batch's bytes, the hand-offs, then `more` and, for a prompt file,
    // each stage's busy time.
    nlohmann::ordered_json split_json(const nlohmann::ordered_json& more, bool busy) const {
        const SplitStats moved = pipeline().split_stats();
        const std::vector<double> busy_ms = busy ? pipeline().stage_busy_ms() : std::vector<double>{};
        nlohmann::ordered_json layers = nlohmann::ordered_json::array();
        nlohmann::ordered_json per_stage = nlohmann::ordered_json::array();
        for (std::size_t i = 0; i < split_->stages().size(); ++i) {
            const Model& m = *split_->stages()[i];
            layers.push_back({m.layers().begin, m.layers().end});
            per_stage.push_back({{"device", contexts_[i]->device_info().name},
                                 {"layers", {m.layers().begin, m.layers().end}},
                                 {"weight_bytes", m.weights().bytes},
                                 {"session_device_bytes", front_->stage(i).device_bytes()}});
            if (busy) {
                per_stage.back()["busy_ms"] = busy_ms[i];
            }
        }
        nlohmann::ordered_json json = {{"mode", "devices"},
                                       {"stages", split_->stages().size()},
                                       {"layers", layers},
                                       {"transfer_ms", moved.transfer_ms},
                                       {"transfer_bytes", moved.transfer_bytes},
                                       {"hand_offs", moved.hand_offs}};
        json.update(more);
        json["per_stage"] = per_stage;
        return json;
    }

    std::vector<std::unique_ptr<Context>> contexts_;
    const Options& options_;
    std::unique_ptr<SplitModel> split_;
    double seconds_ = 0.0;
    std::unique_ptr<StageFront> front_;
    PreparationStats prepared_;
};

}  // namespace

std::unique_ptr<RunStages> local_stages(const Options& o) {
    if (o.devices.empty()) {
        return std::make_unique<OneDevice>(o);
    }
    return std::make_unique<DeviceSplit>(o);
}

}  // namespace vkf::run_cli
