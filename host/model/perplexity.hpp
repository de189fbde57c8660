#pragma once
// Perplexity of a token stream on the device, window by window, as host/spec/perplexity.hpp
// defines it (llama.cpp's definition: non-overlapping windows, each scored on its second half).

#include "host/model/session.hpp"
#include "host/spec/perplexity.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>

namespace vkf {

struct PerplexityOptions {
    std::uint32_t chunk = 128;                   // most tokens per submission (SessionOptions::chunk)
    DType kv_dtype = DType::F16;                 // KV-cache storage (SessionOptions::kv_dtype)
    QuantFormat kv_k_quant = QuantFormat::None;  // SessionOptions::kv_k_quant, kv_v_quant
    QuantFormat kv_v_quant = QuantFormat::None;
    std::size_t max_windows = 0;  // score only the first N windows (0: all)
    // Key window of local attention (SessionOptions::window; 0: full): each token sees the
    // attention_window tokens before it, within its evaluation window of ctx tokens.
    std::uint32_t attention_window = 0;
    // Called after each window (windows done, windows to do), for progress output.
    std::function<void(std::size_t, std::size_t)> progress = {};
};

struct PerplexityResult {
    PerplexityWindows windows;  // windows.windows: those scored (max_windows applied)
    NllSum sum;
    std::chrono::duration<double> time{};
    double perplexity() const { return sum.perplexity(); }
};

// Runs every window through a Session of `ctx` tokens (fresh cache per window). The first
// half of a window runs without logits; the scored half returns them a chunk at a time, so
// memory stays at chunk x vocab floats whatever the context length.
PerplexityResult perplexity(const Model& model, std::span<const std::uint32_t> tokens, std::uint32_t ctx,
                            const PerplexityOptions& options = {});

}  // namespace vkf
