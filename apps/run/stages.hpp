#pragma once
// What vkf-run runs on, whatever the topology: one device, --devices (a layer split over
// several devices of this process) or mpirun (a split over ranks; this is rank 0's side).
// Each loads its stages for the run's size and gets its front from make_front
// (host/model/front_factory.hpp); one prompt (apps/run/one_prompt.cpp) and a --prompt-file
// (apps/run/prompt_file.cpp) then run the same BatchGenerator over it. Only what a topology
// reports of itself differs, and that is all this interface asks beyond the front.

#include "apps/run/options.hpp"
#include "apps/run/report.hpp"
#include "host/io/json.hpp"
#include "host/model/front_factory.hpp"
#include "host/model/model.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace vkf::run_cli {

// What the stages are loaded and their Batches made for; under mpirun rank 0 decides it and
// every rank makes the same.
struct RunSize {
    std::uint32_t max_tokens = 0;     // one prompt: the sequence's KV cache; a prompt file: the pool
    std::uint32_t prompt_tokens = 0;  // the (longest) prompt, whose steps are prepared
    std::uint32_t window = 0;         // resolved (app::run_window)
    std::uint32_t sequences = 0;      // 0: one prompt (a Session's Batch)
    std::uint32_t sequence_tokens = 0;
    std::uint32_t chunk = 0;  // rows per step
};

// Every stage's Batch: a Session's for one prompt, --prompt-file's for several (before
// make_front divides the running sequences into the stages' groups).
BatchOptions run_batch_options(const Options& o, const RunSize& size);

class RunStages {
public:
    virtual ~RunStages() = default;
    // Loads this process's stages for `size` and makes the front over them (under mpirun
    // after the handshake; the other ranks load theirs), its steps prepared.
    virtual void load(const RunSize& size) = 0;
    virtual StageFront& front() = 0;
    virtual const PreparationStats& prepared() const = 0;
    // Stage 0's model: knows the checkpoint (--check's reference, the model's JSON).
    virtual const Model& first() const = 0;
    // The generation ended: under mpirun the ranks are checked and stopped.
    virtual void finish() {}

    // What each topology reports of itself. --json: "device" or "devices" and its value, the
    // "model" object.
    virtual std::string_view device_key() const { return "device"; }
    virtual nlohmann::ordered_json device_json() const = 0;
    virtual nlohmann::ordered_json model_json(const Options& o) const = 0;
    // stderr (unless --quiet) once loaded: the model's or every stage's line. `holder`: who
    // holds the KV cache ("session", "N sequences,").
    virtual void announce(const Options& o, const std::string& holder) const = 0;
    // One prompt: the topology's keys (OneRun::after_kv and after_ctx) and what the JSON
    // ends with; the lines after the summary and the load line.
    virtual void add_one_prompt_json(OneRun& run) const = 0;
    virtual void end_json(const Options&, nlohmann::ordered_json&) const {}
    virtual std::optional<std::string> load_line() const = 0;
    virtual std::string one_prompt_text(const Options& o) const = 0;
    // A prompt file: the aggregate's and the object's keys, the lines after the runs.
    virtual void add_prompt_file_json(const Options& o, nlohmann::ordered_json& aggregate,
                                      nlohmann::ordered_json& json) const = 0;
    virtual std::string prompt_file_text(const Options& o) const = 0;
};

// One device (--device), or the --devices split over this process's devices.
std::unique_ptr<RunStages> local_stages(const Options& o);

// The two paths, on any topology; each returns the exit status (kExitCheckFailed when
// --check found a logit above the tolerance). One prompt (--prompt or --prompt-ids):
std::int32_t run_prompt(RunStages& stages, const Options& o);
// --prompt-file: every line a prompt, --parallel of them at once (apps/run/prompt_batch.hpp).
std::int32_t run_prompt_file(RunStages& stages, const Options& o);

}  // namespace vkf::run_cli
