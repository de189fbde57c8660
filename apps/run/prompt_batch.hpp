#pragma once
// vkf-run --prompt-file's work over any BatchFront: the prompts tokenized, the batch sized,
// the generations run with BatchGenerator (continuous batching) and their output, shared by
// one device (apps/run/parallel.cpp, a Batch) and an MPI layer split (apps/run/distributed.cpp,
// rank 0's pipelined RankZeroBatch), so that both print the same.

#include "apps/common/streamed_text.hpp"
#include "apps/run/check.hpp"
#include "apps/run/options.hpp"
#include "host/io/json.hpp"
#include "host/model/batch.hpp"
#include "host/model/generation.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vkf::run_cli {

struct Prompt {
    std::uint32_t line = 0;
    std::string text;
    std::vector<std::uint32_t> ids;
};

// Every line of --prompt-file encoded; throws vkf::Error naming the line of one that fails.
std::vector<Prompt> tokenize_prompts(const Options& o, const text::Tokenizer& tokenizer);

// How the batch is sized: every running sequence may hold the longest prompt and
// --n-predict tokens, in whole blocks, so no sequence ever waits for a block another holds.
struct Sizing {
    std::uint32_t sequences = 0;  // running at once
    std::uint32_t sequence_tokens = 0;
    std::uint32_t pool_tokens = 0;
    // Rows per step: every decoding row of the running sequences fits one step.
    std::uint32_t chunk = 0;
};
Sizing size_batch(const Options& o, const std::vector<Prompt>& prompts, std::uint32_t block_size);

// The Batch of that sizing with the options' flags (every stage of a split makes the same).
BatchOptions prompt_batch_options(const Options& o, const Sizing& sizing, std::uint32_t window);

using clock = std::chrono::steady_clock;

struct Outcome {
    std::unique_ptr<app::StreamedText> text;
    GenerationResult result;
    std::uint64_t seed = 0;
    std::optional<clock::time_point> first_token;
    clock::time_point end;
    std::optional<CheckResult> check;
};

// The batch's figures over all prompts.
struct Aggregate {
    std::uint64_t generated = 0, decoded = 0;  // decoded: each prompt's tokens after its first
    double seconds = 0.0;                      // submitting the first prompt to the last one's end
    double decode_seconds = 0.0;               // the first token of any prompt to the last one's end
    double per_sequence = 0.0;                 // mean of the prompts' own decode tokens/s
    double decode_tokens_per_second() const { return decode_seconds > 0 ? decoded / decode_seconds : 0.0; }
    double tokens_per_second() const { return seconds > 0 ? generated / seconds : 0.0; }
};

struct PromptRuns {
    std::vector<Outcome> outcomes;  // in the file's order
    std::uint32_t peak_blocks = 0;  // KV blocks in use at the busiest step
    Aggregate total;
};

// Runs every prompt, `sizing.sequences` at once (a queued one joins when one ends), each with
// --seed + its index, keeping the logits for --check.
PromptRuns run_prompts(BatchFront& front, const Options& o, const text::Tokenizer& tokenizer,
                       const std::vector<Prompt>& prompts, const Sizing& sizing,
                       const std::vector<std::uint32_t>& stop_ids);

// --json's "results" array and "aggregate" object.
nlohmann::ordered_json results_json(const std::vector<Prompt>& prompts, const PromptRuns& runs);
nlohmann::ordered_json aggregate_json(const std::vector<Prompt>& prompts, const PromptRuns& runs,
                                      const KvBlocks& blocks, std::uint32_t block_size);
// The text output: every prompt's completion (`after`, when given, prints more per prompt),
// then the batch's figures.
void print_prompt_runs(const Options& o, const std::vector<Prompt>& prompts, const Sizing& sizing,
                       const PromptRuns& runs, const KvBlocks& blocks, std::uint32_t block_size,
                       const std::function<void(std::size_t)>& after = {});

// What the --prompt-file paths (one device, --devices, mpirun) share of their report.
// --check: each prompt's logits against the CPU reference of `model` (a split's first stage
// knows the checkpoint); true when one is above the tolerance.
bool check_prompts(const Options& o, const Model& model, const std::vector<Prompt>& prompts, PromptRuns& runs,
                   std::uint32_t window);
// --json's object up to "aggregate": `device_key` ("device" or "devices") first; the caller
// adds its own keys after.
nlohmann::ordered_json prompt_file_json(const Options& o, std::string_view device_key, nlohmann::ordered_json device,
                                        nlohmann::ordered_json model, const std::vector<Prompt>& prompts,
                                        const Sizing& sizing, const PromptRuns& runs, nlohmann::ordered_json aggregate);
// print_prompt_runs with each prompt's check lines; the caller's lines come after.
void print_prompt_file(const Options& o, const std::vector<Prompt>& prompts, const Sizing& sizing,
                       const PromptRuns& runs, const KvBlocks& blocks, std::uint32_t block_size, const Model& model);
// The last line when check_prompts found one above the tolerance.
void print_prompts_check_failed(const Options& o);

}  // namespace vkf::run_cli
