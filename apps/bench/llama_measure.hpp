#pragma once
// The measurements behind `vkf-bench llama`'s rows (llama_rows.hpp): llama-bench's tests
// timed as llama-bench times them (host wall clock of the prompt and of the generated tokens,
// after an untimed warm-up and the depth's tokens), and the correctness check against the
// float64 CPU reference (host/reference/model.hpp) that marks a row failed.

#include "apps/bench/llama_rows.hpp"
#include "host/model/model.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace vkf::bench {

struct LlamaMeasureOptions {
    std::uint32_t repetitions = 5;
    bool warmup = true;
    std::uint32_t chunk = 512;  // prompt tokens per submission (llama-bench's n_ubatch)
    DType kv_dtype = DType::F16;
    // Called after each repetition with its nanoseconds (sustained mode's live curve).
    std::function<void(std::uint32_t rep, std::uint64_t ns)> on_repetition;
};

// Runs `test` `repetitions` times on `model`: wall-clock nanoseconds of each. Every
// repetition starts from an empty cache, runs n_depth tokens untimed, then times n_prompt
// tokens in one prompt (the logits of its last) and n_gen single-token steps, for every
// sequence at once.
std::vector<std::uint64_t> time_llama_test(const Model& model, const LlamaTest& test, const LlamaMeasureOptions& o);

// The weight bytes one decoding step reads (every matrix, norm and bias, and the head).
std::uint64_t decode_step_bytes(const ModelConfig& config, WeightFormat format);
// Parameters of the model (llama-bench's model_n_params).
std::uint64_t parameter_count(const ModelConfig& config);

struct LlamaCheck {
    double max_rel = 0.0;  // alone, against the float64 reference
    // With sequences > 1: every sequence's logits in the batch against the same sequence alone.
    std::optional<double> batched_max_rel;
    std::uint32_t tokens = 0;
};

// The check of `sequences` sequences of `tokens` tokens each: the first half as a prompt
// (every row's logits), the rest decoded one token a step, every step's logits compared.
// `reference_logits` caches the reference's logits of sequence 0 across calls.
LlamaCheck check_llama_model(const Model& model, std::uint32_t sequences, std::uint32_t tokens,
                             const LlamaMeasureOptions& o, std::vector<double>& reference_logits);

}  // namespace vkf::bench
