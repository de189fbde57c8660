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
#include <optional>
#include <string>
#include <string_view>

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

// GPU time per op kind, largest first.
void print_profile(const Profile& profile, std::uint64_t submissions);
// The check's lines; false when it is above the tolerance (after printing so).
bool print_check(const CheckResult& check, std::size_t steps, const Model& model, double tolerance);

}  // namespace vkf::run_cli
