#pragma once
// vkf-run's command line: the options, their declaration on CLI11, and the checks that need
// several of them at once. Everything wrong here is a usage error (exit status 2).

#include "apps/common/kv_flags.hpp"
#include "apps/common/options.hpp"
#include "host/model/session.hpp"
#include "host/quant/quant_format.hpp"
#include "host/sample/sampler.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkf::run_cli {

// A line of --prompt-file; `line` counts from 1, empty lines included, so that a result
// names the line a reader finds in an editor.
struct FilePrompt {
    std::uint32_t line = 0;
    std::string text;
};

struct Options {
    std::string model;
    std::vector<std::uint32_t> prompt;
    std::optional<std::string> prompt_text;
    std::string prompt_file;
    std::vector<FilePrompt> file_prompts;
    std::uint32_t parallel = 1;
    // --prompt-file: a finished prompt's full KV blocks are not kept for later prompts.
    bool no_prefix_cache = false;
    std::string tokenizer;
    std::vector<std::string> stops;
    bool ignore_eos = false;
    bool interactive = false;
    std::uint32_t ctx = 2048;
    std::optional<std::uint32_t> window;
    std::uint32_t n_predict = 32;
    SamplingParams sampling;
    std::string grammar_file;      // --grammar: GBNF the text must follow (a --prompt run)
    std::string json_schema_file;  // --json-schema: a JSON schema it must validate against
    std::optional<WeightFormat> weights;
    app::KvCacheFlags kv;
    std::uint32_t chunk = 128;
    app::DeviceOptions device;
    // Layer split (issue 31, docs/DESIGN.md "Layer split"): --devices D,D,...: stage i of the
    // model on the i-th device (an index or a name substring; the same device twice is two
    // Contexts on it). --split: "auto" (layers by each device's memory budget, the default)
    // or the layers of every stage, "12,12"; as given, checked by check_options.
    std::vector<std::string> devices;
    std::optional<std::string> split;
    bool profile = false;
    bool int8_activations = false;
    bool unfused = false;
    bool skip_weight_check = false;
    bool check = false;
    double check_tolerance = 1e-3;
    std::string logits_out;
    // llama.cpp's --prompt-cache: a saved sequence state (host/model/sequence_state.hpp) whose
    // tokens that begin the prompt are not run again; written after the run with the prompt's.
    std::string prompt_cache;
    bool json = false;
    bool quiet = false;
    // Under `mpirun -n R` (apps/run/distributed.hpp), where --split gives each rank's layers:
    // the seconds of silence after which a rank counts as failed.
    double rank_timeout = 20.0;
};

void declare_options(CLI::App& cli, Options& o);
// What the options cannot check one at a time.
void check_options(const Options& o);
// What a run split over MPI ranks does not do (one prompt, no --check or --profile).
void check_distributed_options(const Options& o);

// --split's layer counts; empty for "auto" (or no --split). Throws app::UsageError for
// anything but "auto" or comma-separated positive layer counts.
std::vector<std::uint32_t> split_counts(const Options& o);
// The options' flags (--profile, --unfused, --kv, --int8-activations) on a SessionOptions or
// a BatchOptions.
template <class StepOptions>
StepOptions with_run_flags(const Options& o, StepOptions options) {
    options.profiling = o.profile;  // refused with --devices and under mpirun
    options.fuse_qkv = !o.unfused;
    options.fuse_layernorm = !o.unfused;
    options.reuse_steps = !o.unfused;
    o.kv.apply_to(options);
    options.int8_activations = o.int8_activations;
    return options;
}
// One prompt's session (one device, --devices, every rank of mpirun) with the options' flags.
SessionOptions session_options(const Options& o, std::uint32_t max_tokens, std::uint32_t chunk, std::uint32_t window);

// The prompts of a --prompt-file: one per line ('\n' or "\r\n"), lines of only whitespace
// skipped. Throws app::UsageError for a file that cannot be read or holds no prompt.
std::vector<FilePrompt> read_prompt_file(const std::string& path);

}  // namespace vkf::run_cli
