#include "apps/run/load.hpp"

#include "apps/common/progress_line.hpp"
#include "base/format.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

namespace vkf::run_cli {

LoadedModel load_model(Context& ctx, const Options& o, const SessionSize& session) {
    const auto start = std::chrono::steady_clock::now();
    ModelOptions options{.weights = o.weights, .check_finite_weights = !o.skip_weight_check, .session = session};
    auto line = std::make_shared<app::ProgressLine>(!o.quiet);
    options.progress = [line, last = -1](const WeightUploadProgress& p) mutable {
        const int percent = p.total_bytes ? static_cast<int>(100 * p.bytes_done / p.total_bytes) : 100;
        if (percent != last) {
            last = percent;
            line->update(percent / 100.0, fmt::format("loading weights: {}% of {}", percent, size_text(p.total_bytes)));
        }
    };
    LoadedModel loaded{.model = std::make_unique<Model>(ctx, o.model, options)};
    loaded.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return loaded;
}

void print_model_line(const Context& ctx, const Model& model, const Options& o, std::uint64_t kv_device_bytes,
                      const char* holder) {
    if (o.quiet) {
        return;
    }
    const ModelConfig& config = model.config();
    fmt::print(stderr, "{}: {} layers, hidden {}, {} heads, vocab {}, {} weights ({}), {} KV cache ({} {}), on {}\n",
               family_name(config.family), config.n_layer, config.hidden, config.n_head, config.vocab_size,
               to_string(model.weight_format()), size_text(model.weights().bytes), o.kv.name(), holder,
               size_text(kv_device_bytes), ctx.device_info().name);
    if (!ctx.memory_stats().note.empty()) {
        fmt::print(stderr, "vkf-run: {}\n", ctx.memory_stats().note);
    }
}

}  // namespace vkf::run_cli
