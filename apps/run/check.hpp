#pragma once
// vkf-run --check: the generated steps' logits against the double-precision CPU reference
// model (host/reference/model.hpp) run over the same tokens.

#include "host/model/generation.hpp"
#include "host/model/model.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace vkf::run_cli {

struct CheckResult {
    double max_rel = 0.0;  // the largest per-step max |gpu - ref| / max |ref|
    std::uint32_t worst_step = 0;
    // Quantized at load time: the same against the reference on the original weights (the
    // format's own error; max_rel is the kernels' error, against the dequantized weights).
    std::optional<double> original_max_rel;
    double seconds = 0.0;
};

// The reference runs once over prompt + generated[0 .. n-2]: the row of position
// prompt - 1 + s holds the logits step s was sampled from. `result` needs its logits
// (GenerationOptions::keep_logits). `window`: the run's key window, which the reference
// applies too.
CheckResult check_logits(const Model& model, std::span<const std::uint32_t> prompt, const GenerationResult& result,
                         std::uint32_t window, bool quiet);

}  // namespace vkf::run_cli
