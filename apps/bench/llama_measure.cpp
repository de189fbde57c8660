#include "apps/bench/llama_measure.hpp"

#include "apps/bench/model_work.hpp"
#include "base/error.hpp"
#include "host/model/batch.hpp"
#include "host/reference/model.hpp"
#include "host/spec/model_tensors.hpp"
#include "host/util/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <span>

namespace vkf::bench {

namespace {

// A batch of `sequences` sequences of up to `sequence_tokens` each, every one in its own
// blocks (no shared prefixes: the sequences' work is all done, as in separate contexts).
std::unique_ptr<Batch> make_batch(const Model& model, std::uint32_t sequences, std::uint32_t sequence_tokens,
                                  const LlamaMeasureOptions& o) {
    const std::uint32_t block = BatchOptions{}.block_size;
    const std::uint32_t blocks = (sequence_tokens + block - 1) / block;
    return std::make_unique<Batch>(model, BatchOptions{.max_tokens = sequences * blocks * block,
                                                       .max_sequence_tokens = sequence_tokens,
                                                       .max_sequences = sequences,
                                                       .block_size = block,
                                                       .chunk = std::max(sequences, o.chunk),
                                                       .kv_dtype = o.kv_dtype,
                                                       .share_prefixes = false});
}

// Feeds tokens [begin, end) of each sequence's stream and steps until all of them ran;
// appends the logits each step returns to `logits` (by sequence).
void run_tokens(Batch& batch, const std::vector<SequenceId>& ids,
                const std::vector<std::vector<std::uint32_t>>& streams, std::uint32_t begin, std::uint32_t end,
                Logits which, std::vector<std::vector<float>>* logits) {
    if (begin >= end) {
        return;
    }
    for (std::size_t s = 0; s < ids.size(); ++s) {
        batch.feed(ids[s], std::span(streams[s]).subspan(begin, end - begin), which);
    }
    while (batch.has_pending()) {
        const StepResult step = batch.step();
        if (step.ran.empty()) {
            throw Error(fmt::format("llama: a step of {} sequences ran nothing", ids.size()));
        }
        for (const SequenceOutput& out : step.ran) {
            if (logits != nullptr) {
                const auto s = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), out.id) - ids.begin());
                (*logits)[s].insert((*logits)[s].end(), out.logits.begin(), out.logits.end());
            }
        }
    }
}

std::vector<std::vector<std::uint32_t>> token_streams(std::uint32_t sequences, std::uint32_t tokens,
                                                      std::uint32_t vocab, std::uint32_t first_stream = 0) {
    std::vector<std::vector<std::uint32_t>> streams;
    for (std::uint32_t s = 0; s < sequences; ++s) {
        streams.push_back(token_ids(tokens, vocab, first_stream + s));
    }
    return streams;
}

}  // namespace

std::vector<std::uint64_t> time_llama_test(const Model& model, const LlamaTest& test, const LlamaMeasureOptions& o) {
    const std::uint32_t total = test.n_depth + test.n_prompt + test.n_gen;
    if (total == 0) {
        throw Error("llama: a test of no tokens");
    }
    const auto batch = make_batch(model, test.sequences, total, o);
    const auto streams = token_streams(test.sequences, total, model.config().vocab_size);
    std::vector<SequenceId> ids;
    const auto restart = [&] {
        for (const SequenceId id : ids) {
            batch->remove(id);
        }
        ids.clear();
        for (std::uint32_t s = 0; s < test.sequences; ++s) {
            ids.push_back(batch->add());
        }
        run_tokens(*batch, ids, streams, 0, test.n_depth, Logits::None, nullptr);
    };
    const std::uint32_t prompt_end = test.n_depth + test.n_prompt;
    // llama-bench's warm-up: the prompt, and one generated token.
    if (o.warmup) {
        restart();
        run_tokens(*batch, ids, streams, test.n_depth, prompt_end, Logits::Last, nullptr);
        if (test.n_gen > 0) {
            run_tokens(*batch, ids, streams, prompt_end, prompt_end + 1, Logits::Last, nullptr);
        }
    }
    std::vector<std::uint64_t> samples;
    for (std::uint32_t rep = 0; rep < o.repetitions; ++rep) {
        restart();
        const auto start = std::chrono::steady_clock::now();
        run_tokens(*batch, ids, streams, test.n_depth, prompt_end, Logits::Last, nullptr);
        for (std::uint32_t g = 0; g < test.n_gen; ++g) {
            run_tokens(*batch, ids, streams, prompt_end + g, prompt_end + g + 1, Logits::Last, nullptr);
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
        samples.push_back(static_cast<std::uint64_t>(std::max<std::int64_t>(1, ns.count())));
        if (o.on_repetition) {
            o.on_repetition(rep, samples.back());
        }
    }
    return samples;
}

std::uint64_t decode_step_bytes(const ModelConfig& config, WeightFormat format) {
    return bytes_read_per_pass(config, format, true);
}

std::uint64_t parameter_count(const ModelConfig& config) {
    std::uint64_t n = 0;
    for (const ExpectedTensor& t : expected_tensors(config)) {
        std::uint64_t elements = 1;
        for (const std::size_t d : t.shape) {
            elements *= d;
        }
        n += elements;
    }
    return n;
}

namespace {

// Every sequence's logits, [tokens, vocab]: a prompt of the first half (all its rows), then
// one token a step.
std::vector<std::vector<float>> check_logits(const Model& model, std::uint32_t first_stream, std::uint32_t sequences,
                                             std::uint32_t tokens, const LlamaMeasureOptions& o) {
    const auto batch = make_batch(model, sequences, tokens, o);
    const auto streams = token_streams(sequences, tokens, model.config().vocab_size, first_stream);
    std::vector<SequenceId> ids;
    for (std::uint32_t s = 0; s < sequences; ++s) {
        ids.push_back(batch->add());
    }
    std::vector<std::vector<float>> logits(sequences);
    const std::uint32_t prompt = std::max<std::uint32_t>(1, tokens / 2);
    run_tokens(*batch, ids, streams, 0, prompt, Logits::All, &logits);
    for (std::uint32_t t = prompt; t < tokens; ++t) {
        run_tokens(*batch, ids, streams, t, t + 1, Logits::Last, &logits);
    }
    return logits;
}

// The largest per-row max_rel of `out` against `ref`, both [rows, vocab]; +inf for a
// non-finite value.
double worst_row(std::span<const float> out, std::span<const double> ref, std::size_t vocab) {
    double worst = 0.0;
    for (std::size_t row = 0; row * vocab < out.size(); ++row) {
        const ErrorStats e = compare_to_reference(out.subspan(row * vocab, vocab), ref.subspan(row * vocab, vocab));
        if (!(e.max_rel <= worst)) {
            worst = e.max_rel;
        }
    }
    return worst;
}

}  // namespace

LlamaCheck check_llama_model(const Model& model, std::uint32_t sequences, std::uint32_t tokens,
                             const LlamaMeasureOptions& o, std::vector<double>& reference_logits) {
    const std::size_t vocab = model.config().vocab_size;
    LlamaCheck check{.tokens = tokens};
    const std::vector<std::vector<float>> alone = check_logits(model, 0, 1, tokens, o);
    if (reference_logits.empty()) {
        // The weights the device reads: fp16 norms and biases, the exact dequantized blocks.
        const WeightFormat format = model.weight_format();
        const reference::Model reference(
            model.config(), model.checkpoint(),
            {.round_weights_to_f16 = format.dense == DType::F16, .quantize = format.quant});
        // In the chunks the device ran them: the prompt (within one --ubatch), then a token a step
        // (only Jais' length-dependent ALiBi scaling tells the difference).
        std::vector<std::uint32_t> chunk_ends;
        const std::uint32_t prompt = std::max<std::uint32_t>(1, tokens / 2);
        for (std::uint32_t end = std::min(prompt, o.chunk); end < prompt; end = std::min(end + o.chunk, prompt)) {
            chunk_ends.push_back(end);
        }
        for (std::uint32_t end = prompt; end <= tokens; ++end) {
            chunk_ends.push_back(end);
        }
        reference_logits = reference.forward(token_ids(tokens, model.config().vocab_size, 0), chunk_ends);
    }
    check.max_rel = worst_row(alone[0], reference_logits, vocab);
    if (sequences > 1) {
        const std::vector<std::vector<float>> together = check_logits(model, 0, sequences, tokens, o);
        double worst = 0.0;
        for (std::uint32_t s = 0; s < sequences; ++s) {
            const std::vector<float> own = s == 0 ? alone[0] : check_logits(model, s, 1, tokens, o)[0];
            const std::vector<double> own_d(own.begin(), own.end());
            worst = std::max(worst, worst_row(together[s], own_d, vocab));
            if (!std::isfinite(worst)) {
                break;
            }
        }
        check.batched_max_rel = worst;
    }
    return check;
}

}  // namespace vkf::bench
