#pragma once
// vkf-server over a layer split (issue 31): under `mpirun -n R` the decoder's layers split
// over the ranks, with --devices over several devices of this process. serve() runs as
// alone, but loads only the first stage's layers on its Context and gets its front from the
// split's SplitStages, which make it with make_front (host/model/front_factory.hpp) as serve()
// makes one device's: over MPI a RankZeroBatch (host/dist/batch_pipeline.hpp), whose other
// ranks serve their stages until rank 0 stops; over --devices a SplitBatch
// (host/model/split_batch.hpp) over the later stages' Models this process loads
// (apps/server/devices.cpp). Both pipeline the steps. docs/SERVER.md tells how.

#include "apps/server/options.hpp"
#include "host/model/front_factory.hpp"
#include "host/model/layer_range.hpp"
#include "host/model/memory_estimate.hpp"
#include "runtime/context.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace vkf::server {

// What serve() asks of a layer split beyond one device: the stages after the first, over MPI
// ranks (rank 0's side) or over the devices of this process.
class SplitStages {
public:
    virtual ~SplitStages() = default;
    // The stages (ranks, or devices).
    virtual std::uint32_t stages() const = 0;
    // Plans the split (under mpirun: the handshake with every rank; `ctx`: the first stage's
    // device, serve()'s Context, for --split auto; `session`: what each stage holds beside
    // its weights, decoder_setup's); the layers the first stage loads.
    virtual LayerRange layers(const ModelConfig& config, const SessionSize& session, const Context& ctx) = 0;
    // The front the engine drives, over `first` (the first stage's Model) and the later
    // stages, every stage's Batch made with `options` (make_front).
    virtual std::unique_ptr<StageFront> front(const Model& first, const BatchOptions& options) = 0;
    // Calls `failed` (from another thread) with the failure when a rank fails.
    virtual void watch(std::function<void(const std::string& failure)> failed) = 0;
    // serve() was sent SIGTERM or SIGINT: under mpirun, maybe because a rank died (mpirun ends
    // the job so, SIGKILL a second later): the requests in flight then fail naming it.
    virtual void interrupted() {}
    // The engine is gone, `front` not yet: stops the other ranks, or throws the rank failure
    // that ended the run.
    virtual void finish(StageFront& front) = 0;
};

// The server; `split` null: the whole model in this process. `first`: the options of
// serve()'s Context (default: --device's).
int serve(const Options& o, SplitStages* split, const std::optional<ContextOptions>& first = {});

// vkf-server --devices: the split over the devices of this process.
int serve_devices(const Options& o);

// Whether this build has MPI; serve_ranks throws saying so when it has not.
bool mpi_built();
// One rank's whole run under mpirun; the exit status.
int serve_ranks(const Options& o);

}  // namespace vkf::server
