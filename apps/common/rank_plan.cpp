#include "apps/common/rank_plan.hpp"

#include "apps/common/app_main.hpp"
#include "apps/common/exit_codes.hpp"
#include "apps/common/stop_signals.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/safetensors.hpp"
#include "host/model/layer_split.hpp"
#include "host/model/weights.hpp"
#include "host/quant/gguf_tensor_file.hpp"
#include "host/spec/model_tensors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstdio>
#include <thread>

#include <unistd.h>

namespace vkf::app {

dist::RankDevice rank_device(const Context& ctx) {
    std::array<char, 256> host{};
    if (gethostname(host.data(), host.size() - 1) != 0) {
        host[0] = '\0';  // one unnamed host: ranks then share a device only by its UUID
    }
    return {.host = host.data(),
            .name = ctx.device_info().name,
            .uuid = ctx.device_info().uuid_hex(),
            .budget = ctx.memory_budget().available()};
}

dist::Fingerprint rank_fingerprint(const Context& ctx, const std::filesystem::path& model,
                                   const std::optional<std::string>& split, std::string shared_options) {
    dist::Fingerprint mine = dist::fingerprint(model, split.value_or("auto"), std::move(shared_options));
    mine.device = rank_device(ctx);
    return mine;
}

std::vector<LayerRange> plan_rank_layers(const RankPlanInput& in, std::span<const dist::Fingerprint> by_rank) {
    const auto ranks = by_rank.size();
    const ShardedCheckpoint checkpoint = open_model_checkpoint(in.model);
    const ModelConfig config = resolve_with_checkpoint(read_model_config(in.model), checkpoint);
    if (in.split && *in.split != "auto") {
        const std::vector<std::uint32_t> counts = parse_layer_counts(*in.split);
        if (counts.size() != ranks) {
            throw Error(
                fmt::format("--split {} gives {} layer counts for {} MPI ranks", *in.split, counts.size(), ranks));
        }
        return split_layers(config, counts);
    }
    const std::vector<std::uint64_t> budgets = dist::shared_budgets(by_rank);
    try {
        return auto_split(config, in.weights.value_or(default_weight_format(checkpoint, config)), in.session, budgets,
                          "rank");
    } catch (const Error& e) {
        // The ranks' own budgets and devices, beside the shares auto_split names.
        std::vector<std::string> devices;
        for (std::size_t r = 0; r < ranks; ++r) {
            const dist::RankDevice& d = by_rank[r].device;
            devices.push_back(fmt::format("rank {}: {} on {}, {} ({} for its layers)", r, d.name, d.host,
                                          size_text(d.budget), size_text(budgets[r])));
        }
        throw Error(fmt::format("{}; ranks on one device share its memory ({})", e.what(), fmt::join(devices, "; ")));
    }
}

nlohmann::ordered_json layers_json(std::span<const LayerRange> layers) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const LayerRange& r : layers) {
        j.push_back({r.begin, r.end});
    }
    return j;
}

std::vector<LayerRange> layers_from_json(const nlohmann::json& j) {
    try {
        std::vector<LayerRange> layers;
        for (const auto& r : j) {
            layers.push_back({r.at(0).get<std::uint32_t>(), r.at(1).get<std::uint32_t>()});
        }
        return layers;
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("rank 0's layers are not a plan: ") + e.what());
    }
}

int run_rank(std::string_view program, dist::MpiEnvironment& env, dist::Channel& channel,
             const std::function<int()>& body) {
    const auto failed = [&](const std::string& message, bool usage, bool grace) {
        env.abandon();
        std::fflush(stdout);
        if (usage) {
            fmt::print(stderr, "{}: {} (see {} --help)\n", program, message, program);
        } else {
            fmt::print(stderr, "{}: error: rank {} of {}: {}\n", program, env.rank(), env.size(), message);
        }
        std::fflush(stderr);
        const int status = usage ? kExitUsage : kExitFailure;
        if (grace) {
            std::this_thread::sleep_for(dist::kFailureGrace);
            // Not a plain exit: mpirun told not to abort on a rank's exit (which lets rank 0
            // answer when another dies) would wait on for a stopped rank.
            channel.abort_job(status);
        }
        return status;  // mpirun's SIGTERM ends every rank; run_app makes it 143
    };
    try {
        return body();
    } catch (const dist::RankFailure& e) {
        // mpirun's SIGTERM: it ends every rank at once, nothing to wait for.
        return failed(e.what(), false, stop_signal() == 0);
    } catch (const UsageError& e) {
        channel.fail_self(e.what());
        return failed(e.what(), true, true);
    } catch (const std::exception& e) {
        // This rank's own error: every other rank hears it and names this rank.
        channel.fail_self(e.what());
        return failed(e.what(), false, true);
    }
}

}  // namespace vkf::app
