#pragma once
// What vkf-run prints after generating, shared by one prompt and a --prompt-file: the JSON
// objects of the model, the sampling and the memory, the profile table and the check lines.

#include "apps/run/check.hpp"
#include "apps/run/options.hpp"
#include "host/io/json.hpp"
#include "host/model/batch.hpp"
#include "host/model/generation.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace vkf::run_cli {

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
