#pragma once
// What vkf-run and vkf-server do alike at an MPI start-up (issue 31, docs/DISTRIBUTED.md):
// this rank's device and fingerprint for the handshake, rank 0's layers for every rank from
// `--split auto|N,N,...`, and one way out for a rank that fails (every rank prints its error
// before any exits, and none reaches MPI_Finalize). Built only with MPI (vkf_dist).

#include "host/dist/channel.hpp"
#include "host/dist/fingerprint.hpp"
#include "host/dist/mpi_env.hpp"
#include "host/model/layer_range.hpp"
#include "host/model/memory_estimate.hpp"
#include "host/quant/quant_format.hpp"
#include "runtime/context.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::app {

// This rank's device (host, name, UUID, memory budget), for rank 0's `--split auto`.
dist::RankDevice rank_device(const Context& ctx);

// This rank's handshake message: the model directory's fingerprint, the --split given
// ("auto" when none), the options every stage must share (the caller's words), this device.
dist::Fingerprint rank_fingerprint(const Context& ctx, const std::filesystem::path& model,
                                   const std::optional<std::string>& split, std::string shared_options);

// What rank 0 plans the layers with.
struct RankPlanInput {
    std::filesystem::path model;
    std::optional<std::string> split;     // --split: none or "auto", or the counts "N,N,..."
    std::optional<WeightFormat> weights;  // --weights; none: the checkpoint's default
    SessionSize session;                  // what every stage holds beside its weights
};

// Rank 0's layers for every rank (`by_rank`: the handshake's fingerprints): the counts given,
// which must be one per rank, or auto: by each rank's memory budget (ranks on one device share
// it, dist::shared_budgets). Throws vkf::Error naming the numbers: counts and ranks, or what
// the model needs and each rank's device, host and budget.
std::vector<LayerRange> plan_rank_layers(const RankPlanInput& in, std::span<const dist::Fingerprint> by_rank);

// The ranges as JSON [[begin, end], ...] for rank 0's plan, and back (vkf::Error when not one).
nlohmann::ordered_json layers_json(std::span<const LayerRange> layers);
std::vector<LayerRange> layers_from_json(const nlohmann::json& j);

// Runs one rank's `body` and returns its exit status. A failure is printed here, not by
// run_app: every rank prints before any exits (dist::kFailureGrace, skipped after mpirun's
// SIGTERM, which ends every rank at once), and none reaches MPI_Finalize, which would wait for
// a dead rank. This rank's own error is told to every peer first (Channel::fail_self).
int run_rank(std::string_view program, dist::MpiEnvironment& env, dist::Channel& channel,
             const std::function<int()>& body);

}  // namespace vkf::app
