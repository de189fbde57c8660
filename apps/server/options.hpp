#pragma once
// vkf-server's command line, and the decoder's model and batch options it implies: the same
// on every MPI rank, which parses the same arguments (apps/server/distributed.hpp).

#include "apps/common/kv_flags.hpp"
#include "apps/common/options.hpp"
#include "host/model/batch.hpp"
#include "host/model/model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkf::server {

struct Options {
    std::string model;
    std::string embedding_model;
    std::string tokenizer;
    std::string name;
    std::string host = "127.0.0.1";
    std::uint32_t port = 8080;
    std::uint32_t parallel = 4;
    std::uint32_t queue = 16;
    std::optional<std::uint32_t> ctx;
    std::optional<std::uint32_t> ctx_blocks;
    std::optional<std::uint32_t> window;
    std::optional<std::uint32_t> max_prompt_tokens;
    std::optional<std::uint32_t> max_tokens;
    std::uint32_t max_n = 4;
    std::uint64_t max_body = 1 << 20;
    std::optional<std::uint32_t> http_threads;
    // The transport's guard (apps/server/guarded_server.hpp).
    double header_timeout = 10.0;         // seconds for a request's line and headers
    double body_timeout = 30.0;           // seconds for its body
    std::uint32_t max_connections = 256;  // connections sending a request at once
    // The key every request but /health must bring: from --api-key, or (kept out of `ps`)
    // --api-key-file or the environment's VKF_API_KEY; resolve_api_key reads the latter two.
    std::optional<std::string> api_key;
    std::optional<std::string> api_key_file;
    std::vector<std::string> cors_origins;   // --cors-origin, each given
    std::vector<std::string> allowed_hosts;  // --allowed-host, each given
    std::optional<std::string> chat_format;
    std::optional<WeightFormat> weights;
    app::KvCacheFlags kv;
    std::uint32_t chunk = 128;
    app::DeviceOptions device;
    // A layer split in this process (apps/server/devices.cpp): stage i on devices[i].
    std::vector<std::string> devices;
    // The layers of each stage ("N,N,...": of each device of --devices, or under mpirun of each
    // rank), or "auto" (none: auto) by each device's or rank's memory budget and this server's
    // KV blocks (host/model/split_model.hpp, apps/common/rank_plan.hpp).
    std::optional<std::string> split;
    double rank_timeout = 20.0;  // under mpirun: seconds of silence after which a rank failed
    bool quiet = false;
    // Keep no finished sequence's blocks (BatchOptions::cache_prefixes off); a key window
    // turns the cache off too (its sequences give their first blocks back as they go).
    bool no_prefix_cache = false;
};

void declare_options(CLI::App& cli, Options& o);
// Refuses option combinations that cannot run (app::UsageError); `mpirun`: started by
// mpirun with several ranks.
void check_options(const Options& o, bool mpirun);
// Reads the API key from --api-key-file or VKF_API_KEY (`env_key`: its value, null when it is
// not set) into o.api_key; refuses a key from two places, an empty one, and one with a space or
// a control character (app::UsageError).
void resolve_api_key(Options& o, const char* env_key);
// --split's layer counts; empty for auto (or none). Throws app::UsageError for bad text.
std::vector<std::uint32_t> split_counts(const Options& o);

// The decoder's options from the command line and its config.json. Over `ranks` stages (MPI
// ranks or devices) a step runs at most --parallel / ranks sequences (rounded up,
// stage_batch_options, which make_front applies to `batch`): the running sequences form
// micro-batches that follow each other down the stages' pipeline (host/model/step_pipeline.hpp).
struct DecoderSetup {
    ModelOptions model;                 // each stage's memory counts its Batch's sequences per step
    BatchOptions batch;                 // --parallel sequences, before make_front divides them
    std::uint32_t ctx_tokens = 0;       // tokens one sequence holds
    std::uint32_t sequence_tokens = 0;  // with a window: no bound but the prompt's
    std::uint32_t blocks = 0;           // KV blocks of all sequences
};
DecoderSetup decoder_setup(const Options& o, const ModelConfig& config, std::uint32_t ranks = 1);

}  // namespace vkf::server
