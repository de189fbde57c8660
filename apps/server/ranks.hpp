#pragma once
// vkf-server under `mpirun -n R` (issue 31): the decoder's layers split over the ranks. Rank 0
// is the HTTP front end: serve() runs as alone, but loads only its layers and hands the
// engine a RankZeroBatch (host/dist/batch_pipeline.hpp), which pipelines the steps over the
// ranks; the other ranks serve their stages until rank 0 stops. docs/SERVER.md tells how.

#include "apps/server/options.hpp"
#include "host/model/batch_front.hpp"
#include "host/model/layer_range.hpp"
#include "host/model/memory_estimate.hpp"
#include "runtime/context.hpp"

#include <functional>

namespace vkf::server {

// What serve() asks of rank 0's side of the split.
class RankZero {
public:
    virtual ~RankZero() = default;
    virtual std::uint32_t ranks() const = 0;
    // Runs the handshake with every rank (`ctx`: rank 0's device, for --split auto; `session`:
    // what each stage holds beside its weights, decoder_setup's); the layers rank 0 loads.
    virtual LayerRange layers(const ModelConfig& config, const SessionSize& session, const Context& ctx) = 0;
    // The front the engine drives over rank 0's stage.
    virtual BatchFront& front(Batch& stage) = 0;
    // Calls `stop` (from another thread) when a rank fails.
    virtual void watch(std::function<void()> stop) = 0;
    // The engine is gone: stops the other ranks, or throws the rank failure that ended the run.
    virtual void finish() = 0;
};

// The server; `rank_zero` null: the whole model in this process.
int serve(const Options& o, RankZero* rank_zero);

// Whether this build has MPI; serve_ranks throws saying so when it has not.
bool mpi_built();
// One rank's whole run under mpirun; the exit status.
int serve_ranks(const Options& o);

}  // namespace vkf::server
