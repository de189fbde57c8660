#pragma once
// What vkf-run prints while and after generating, shared by one prompt, a --prompt-file, a
// --devices split and an MPI split: the streamed text, the JSON objects of the model, the
// sampling and the memory, the profile table and the check lines.

#include "apps/common/streamed_text.hpp"
#include "apps/run/check.hpp"
#include "apps/run/options.hpp"
#include "host/io/json.hpp"
#include "host/model/batch.hpp"
#include "host/model/generation.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::run_cli {

// A text prompt's output: prints the prompt (not for --json) and makes gen.on_token stream
// each token's text into `streamed` (stdout, or collected only for --json), which must outlive
// the generation; Ctrl-C stops it and keeps the output.
void stream_prompt_text(const Options& o, const text::Tokenizer& tokenizer, std::optional<app::StreamedText>& streamed,
                        GenerationOptions& gen);

// The --json word of a stop reason ("length": --n-predict or a full KV cache, "eos", "stop string").
std::string_view stop_reason_name(StopReason reason);
// The same in a sentence's words ("end-of-sequence token").
std::string_view stop_reason_text(StopReason reason);

nlohmann::ordered_json model_json(const Options& o, const Model& model, double load_seconds);
nlohmann::ordered_json sampling_json(const SamplingParams& sampling);
// "prepare: N pipelines in X s (...)": what Session::prepare made before the first token.
std::string prepare_line(const PreparationStats& stats);
nlohmann::ordered_json prepare_json(const PreparationStats& stats);
// Device buffers that went to host-visible memory because device-local memory was full
// (runtime/memory.hpp), and why; 0 and null on most devices.
void add_memory_json(nlohmann::ordered_json& json, const Context& ctx);
nlohmann::ordered_json check_json(const CheckResult& check);
nlohmann::ordered_json profile_json(const Profile& profile);

// GPU time per op kind, largest first: the lines, and printed.
std::string profile_text(const Profile& profile, std::uint64_t submissions);
void print_profile(const Profile& profile, std::uint64_t submissions);
// The check's lines; false when it is above the tolerance (after printing so).
bool print_check(const CheckResult& check, std::size_t steps, const Model& model, double tolerance);

// What one prompt's run reports, on one device, over --devices or under mpirun: each path
// fills in its own device(s), model and extras, and all print the same keys and lines.
struct OneRun {
    std::span<const std::uint32_t> prompt;
    const GenerationResult& result;
    bool interrupted = false;                     // a signal ended it (stop is Caller then)
    const app::StreamedText* streamed = nullptr;  // the text, for a --prompt
    PreparationStats prepared;
    std::string kv;  // KvCacheFlags::name(): owned, the flags make it anew
    std::uint32_t window = 0;
    std::uint32_t ctx = 0;  // the KV cache's positions
    const CheckResult* check = nullptr;
    std::uint32_t blocks_held = 0;  // the sequence's KV blocks at its last token
    // --json: "device" (or "devices") and "model", and each path's own keys where it has
    // always printed them: after "kv" (a --devices "split") and after "ctx" (an mpirun
    // "split", one device's memory figures).
    std::string_view device_key = "device";
    nlohmann::ordered_json device;
    nlohmann::ordered_json model;
    nlohmann::ordered_json after_kv = nlohmann::ordered_json::object();
    nlohmann::ordered_json after_ctx = nlohmann::ordered_json::object();
};

// What every path knows after generate(): `interrupted` from the stop signal (a signal ends
// a generation the way a stop string does: the callback declines the next token).
OneRun one_run(std::span<const std::uint32_t> prompt, const GenerationResult& result,
               const std::optional<app::StreamedText>& streamed, const PreparationStats& prepared, std::uint32_t window,
               std::uint32_t ctx);

// The --json object; the caller prints it (after adding what comes last, e.g. "profile").
nlohmann::ordered_json one_run_json(const Options& o, const OneRun& run);
// The text summary: the generated ids (no --prompt), why it stopped, `load_line` when given,
// the prepare, prefill and decode lines, `extra` (the path's own lines) and the check's lines
// (`model`: the checkpoint's weight format). Returns the exit status.
int print_one_run(const Options& o, const OneRun& run, const Model& model, const std::optional<std::string>& load_line,
                  const std::string& extra);

}  // namespace vkf::run_cli
