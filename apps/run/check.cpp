#include "apps/run/check.hpp"

#include "apps/common/progress_line.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/reference/model.hpp"
#include "host/util/compare.hpp"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

namespace vkf::run_cli {

CheckResult check_logits(const Model& model, std::span<const std::uint32_t> prompt, const GenerationResult& result,
                         std::uint32_t window, bool quiet) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::uint32_t> ids(prompt.begin(), prompt.end());
    ids.insert(ids.end(), result.tokens.begin(), result.tokens.end() - 1);
    const std::size_t vocab = model.config().vocab_size;
    auto line = std::make_shared<app::ProgressLine>(!quiet);
    // The largest per-step error against a reference run with `options`, and its step.
    const auto worst_against = [&](reference::ModelOptions options, const char* what) {
        options.progress = [line, what](std::uint32_t layer, std::uint32_t n_layer) {
            line->update(static_cast<double>(layer + 1) / n_layer,
                         fmt::format("check: CPU reference model ({}), layer {} of {}", what, layer + 1, n_layer));
        };
        ModelConfig config = model.config();
        config.attention_window = window;
        const reference::Model reference(config, model.checkpoint(), options);
        // In the session's chunks where they cover exactly these tokens (a first turn).
        const bool same_chunks = !result.chunk_ends.empty() && result.chunk_ends.back() == ids.size();
        const std::vector<double> ref =
            same_chunks ? reference.forward(ids, result.chunk_ends) : reference.forward(ids);
        std::pair<double, std::uint32_t> worst{0.0, 0};
        for (std::uint32_t s = 0; s < result.tokens.size(); ++s) {
            const std::size_t row = prompt.size() - 1 + s;
            const ErrorStats e = compare_to_reference(std::span(result.logits).subspan(s * vocab, vocab),
                                                      std::span(ref).subspan(row * vocab, vocab));
            if (!(e.max_rel <= worst.first)) {
                worst = {e.max_rel, s};
            }
        }
        return worst;
    };
    // The weights the GPU reads: fp16 norms and biases, and the exact dequantized blocks.
    const WeightFormat format = model.weight_format();
    CheckResult check;
    std::tie(check.max_rel, check.worst_step) = worst_against(
        {.round_weights_to_f16 = format.dense == DType::F16, .quantize = format.quant}, "weights as stored");
    if (format.quant != QuantFormat::None && checkpoint_quantization(model.checkpoint()) == QuantFormat::None) {
        check.original_max_rel = worst_against({}, "original weights").first;
    }
    check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return check;
}

}  // namespace vkf::run_cli
