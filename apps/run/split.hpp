#pragma once
// vkf-run --devices D,D,... [--split auto|N,N]: one prompt through a model split by layers
// over several devices of this process (host/model/split_session.hpp), or a --prompt-file's
// over a pipelined SplitBatch (host/model/split_batch.hpp); the same output as a run on one
// device, plus a line per stage and the split's figures.

#include "apps/run/options.hpp"
#include "host/io/json.hpp"
#include "host/model/split_model.hpp"
#include "host/model/split_session.hpp"
#include "runtime/context.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace vkf::run_cli {

// One Context per --devices entry, each with --limits and --timeout; the same device named
// twice is opened twice.
std::vector<std::unique_ptr<Context>> open_devices(const Options& o);

struct LoadedSplit {
    std::vector<std::unique_ptr<Context>> contexts;  // stage i's at i
    std::unique_ptr<SplitModel> split;
    double seconds = 0.0;  // wall time of reading and uploading every stage
};
// The --devices split (--split's counts or auto for `session`), with a progress line.
LoadedSplit load_split(const Options& o, const SessionSize& session);

// --json's "split" of a --devices run (an MPI run's has the same shape, mode "ranks"):
// each stage's layers, device, weights and `stage_bytes` (its session's or batch's), the
// hand-offs, then `more` and, where given, each stage's `busy_ms`.
nlohmann::ordered_json devices_split_json(const SplitModel& split,
                                          const std::vector<std::unique_ptr<Context>>& contexts,
                                          const std::vector<std::uint64_t>& stage_bytes, const SplitStats& moved,
                                          const nlohmann::ordered_json& more, std::span<const double> busy_ms = {});

int run_split(const Options& o);
// vkf-run --devices --prompt-file [--parallel N] (apps/run/split_parallel.cpp): the prompts
// over a SplitBatch, printed as one device prints them, with the pipeline's figures.
int run_split_prompt_file(const Options& o);

}  // namespace vkf::run_cli
