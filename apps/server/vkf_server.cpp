// vkf-server: an OpenAI-compatible HTTP server (completions, chat completions, streaming,
// embeddings, /v1/models, /health, /metrics) over a decoder checkpoint run as a continuously
// batched session, and a JinaBERT encoder for embeddings. docs/DESIGN.md "Server" describes
// its threads.

#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/options.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/server/engine.hpp"
#include "apps/server/guarded_server.hpp"
#include "apps/server/options.hpp"
#include "apps/server/ranks.hpp"
#include "apps/server/routes.hpp"
#include "apps/server/signal_stop.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/dist/launch.hpp"
#include "host/io/gguf.hpp"
#include "host/io/json.hpp"
#include "host/io/text_file.hpp"
#include "host/model/encoder.hpp"
#include "host/model/front_factory.hpp"
#include "host/spec/encoder_config.hpp"
#include "host/text/token_pieces.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace {

using vkf::server::Options;

constexpr const char* kAbout =
    "Serves a decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais) through OpenAI's HTTP API:\n"
    "POST /v1/completions and /v1/chat/completions (streamed as server-sent events with\n"
    "\"stream\": true), GET /v1/models, /health and /metrics (Prometheus). Requests join one\n"
    "running batch (--parallel sequences; --queue more wait; past that: 503). A JinaBERT\n"
    "checkpoint (as --model or --embedding-model) serves POST /v1/embeddings.\n"
    "It listens on 127.0.0.1 unless --host says otherwise, answers only its own Host names\n"
    "(--allowed-host) and no browser page of another origin (--cors-origin).\n"
    "Stop it with Ctrl-C or SIGTERM: the running requests end at once (a stream with an error\n"
    "event and [DONE], a whole answer with 503) and it exits 0; a second signal, or a stop\n"
    "not done in 1.5 s, exits at once with 128 + the signal (130, 143). docs/SERVER.md.\n";

bool is_encoder(const std::string& dir) {
    std::error_code ignored;
    if (std::filesystem::is_regular_file(dir, ignored) && vkf::looks_like_gguf(dir)) {
        return false;  // a GGUF file is a decoder (host/spec/gguf_checkpoint.hpp)
    }
    const std::filesystem::path config = std::filesystem::path(dir) / "config.json";
    return vkf::is_encoder_config(vkf::read_text_file(config), config.string());
}

std::string default_name(const std::string& dir) {
    const std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
    const std::string name = (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
    return name.empty() ? "model" : name;
}

// sentence-transformers' 1_Pooling/config.json says CLS or mean; mean without it.
vkf::Pooling encoder_pooling(const std::string& dir) {
    const std::filesystem::path path = std::filesystem::path(dir) / "1_Pooling" / "config.json";
    if (!std::filesystem::exists(path)) {
        return vkf::Pooling::Mean;
    }
    const vkf::JsonValue config = vkf::read_json_file(path);
    const vkf::JsonValue* cls = config.find("pooling_mode_cls_token");
    return cls != nullptr && cls->as_bool() ? vkf::Pooling::Cls : vkf::Pooling::Mean;
}

// How long rank 0 answers on after a rank failed (/health with the failure) before it stops.
constexpr std::chrono::seconds kFailedServerLinger{1};

}  // namespace

int vkf::server::serve(const Options& o, SplitStages* split, const std::optional<vkf::ContextOptions>& first) {
    // SignalStop's thread owns SIGINT and SIGTERM: every thread started from here blocks them.
    const sigset_t signals = vkf::app::block_stop_signals();
    vkf::server::SignalStop signal_stop(signals, o.quiet);

    std::optional<vkf::text::ChatFormat> chat_format;
    if (o.chat_format) {
        chat_format = vkf::text::parse_chat_format(*o.chat_format);
        if (!chat_format) {
            throw vkf::app::UsageError("--chat-format is chatml, baichuan, jais or none, not '" + *o.chat_format + "'");
        }
    }
    const bool model_is_encoder = is_encoder(o.model);
    if (split != nullptr && (model_is_encoder || !o.embedding_model.empty())) {
        throw vkf::app::UsageError("a layer split (--devices, or mpirun) serves a decoder: no encoder");
    }
    if (model_is_encoder && !o.embedding_model.empty()) {
        throw vkf::app::UsageError("--model is an encoder already; --embedding-model is for a decoder's server");
    }
    const std::string encoder_dir = model_is_encoder ? o.model : o.embedding_model;

    vkf::Context ctx(first.value_or(o.device.context_options()));
    vkf::serve::Metrics metrics;
    vkf::server::Served served;
    served.metrics = &metrics;
    served.settings.api_key = o.api_key;
    served.settings.max_body_bytes = o.max_body;
    served.settings.limits.max_n = o.max_n;
    served.settings.hosts = vkf::serve::host_policy(o.host, o.allowed_hosts);
    served.settings.cors.origins = o.cors_origins;

    std::unique_ptr<vkf::Model> model;
    std::unique_ptr<vkf::StageFront> stages;
    std::optional<vkf::text::Tokenizer> tokenizer;
    std::unique_ptr<vkf::server::Engine> engine;
    if (!model_is_encoder) {
        tokenizer = vkf::app::load_model_tokenizer(o.model, o.tokenizer);
        const vkf::ModelConfig config = vkf::read_model_config(o.model);
        const vkf::server::DecoderSetup setup =
            vkf::server::decoder_setup(o, config, split != nullptr ? split->stages() : 1);
        const std::uint32_t ctx_tokens = setup.ctx_tokens;
        const std::uint32_t sequence_tokens = setup.sequence_tokens;
        const std::uint32_t blocks = setup.blocks;
        const std::uint32_t block = setup.batch.block_size;
        vkf::ModelOptions model_options = setup.model;
        if (split != nullptr) {
            model_options.layers = split->layers(config, setup.model.session, ctx);
        }
        model = std::make_unique<vkf::Model>(ctx, o.model, model_options);
        // The front of this topology (make_front): one device's Batch, or the split's.
        stages = split != nullptr ? split->front(*model, setup.batch)
                                  : vkf::make_front({.stages = {model.get()}}, setup.batch);
        // The steps a first request takes (its prompt in chunks, one sequence decoding) are
        // recorded, their pipelines made, before the server listens: the first request's
        // time to first token holds no compile. Other mixes record their steps when they come.
        const vkf::PreparationStats prepared = stages->prepare(o.chunk);
        if (!o.quiet) {
            fmt::print(stderr, "vkf-server: prepare: {} pipelines in {:.3f} s ({} made on {} threads)\n",
                       prepared.pipelines, prepared.seconds, prepared.created, prepared.threads);
        }
        engine = std::make_unique<vkf::server::Engine>(stages->front(), *tokenizer, metrics,
                                                       vkf::server::EngineOptions{o.parallel, o.queue});
        served.settings.limits.max_tokens = o.max_tokens.value_or(ctx_tokens);
        served.decoder = vkf::server::ServedDecoder{
            .name = o.name.empty() ? default_name(o.model) : o.name,
            .engine = engine.get(),
            .tokenizer = &*tokenizer,
            .vocab_size = model->config().vocab_size,
            .chat_format = chat_format ? *chat_format : vkf::text::detect_chat_format(o.model),
            .eos_ids = model->config().eos_token_ids,
            .sequence_tokens = sequence_tokens,
            .max_prompt_tokens = std::min(o.max_prompt_tokens.value_or(ctx_tokens), ctx_tokens),
            .pieces = std::make_shared<const vkf::grammar::PieceTrie>(
                vkf::text::token_pieces(*tokenizer, model->config().vocab_size))};
        if (!o.quiet) {
            fmt::print(stderr, "vkf-server: {} ({} layers, {}), chat format {}, {} KV blocks of {} tokens, on {}\n",
                       served.decoder->name, model->config().n_layer, vkf::to_string(model->weight_format()),
                       vkf::text::to_string(served.decoder->chat_format), blocks, block, ctx.device_info().name);
        }
    }
    std::unique_ptr<vkf::Encoder> encoder;
    std::optional<vkf::text::Tokenizer> encoder_tokenizer;
    vkf::server::ServedEncoder served_encoder;
    if (!encoder_dir.empty()) {
        encoder_tokenizer = vkf::app::load_model_tokenizer(encoder_dir, model_is_encoder ? o.tokenizer : "");
        encoder = std::make_unique<vkf::Encoder>(ctx, encoder_dir, vkf::EncoderOptions{.weights = o.weights});
        served_encoder.name = model_is_encoder && !o.name.empty() ? o.name : default_name(encoder_dir);
        served_encoder.encoder = encoder.get();
        served_encoder.tokenizer = &*encoder_tokenizer;
        served_encoder.pooling = encoder_pooling(encoder_dir);
        served_encoder.max_tokens =
            std::min(o.max_prompt_tokens.value_or(8192), encoder->config().max_position_embeddings);
        served.encoder = &served_encoder;
    }

    const auto seconds = [](double s) { return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000)); };
    vkf::server::GuardedServer http({.max_body = o.max_body,
                                     .header_timeout = seconds(o.header_timeout),
                                     .body_timeout = seconds(o.body_timeout),
                                     .max_connections = o.max_connections,
                                     .handlers = o.http_threads.value_or(o.parallel + o.queue + 8)},
                                    metrics);
    served.device = ctx.device_info().name;
    vkf::server::install_routes(http, served);
    const int port = o.port == 0
                         ? http.bind_to_any_port(o.host)
                         : (http.bind_to_port(o.host, static_cast<int>(o.port)) ? static_cast<int>(o.port) : -1);
    if (port < 0) {
        throw vkf::Error(
            fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)", o.host, o.port));
    }
    fmt::print("vkf-server: listening on http://{}:{}\n", o.host, port);
    std::fflush(stdout);

    bool ok = true;
    {
        // The first signal: every request ends now (its stream's last events written), then
        // no new connections, and idle keep-alive ones end instead of waiting out their timeout.
        // Reading is not shut down on the connections: a whole answer's handler may still be
        // writing its 503, and a socket shut for reading looks closed to its write check.
        const bool armed = signal_stop.arm([&] {
            if (split != nullptr) {
                // Before the abort: mpirun's SIGTERM after a rank died, and the requests in
                // flight fail naming that rank rather than the shutdown.
                split->interrupted();
            }
            if (engine) {
                engine->abort_all(std::chrono::milliseconds(500));
                served.open_streams.wait_closed(std::chrono::milliseconds(500));
            }
            // Connections waiting for a request see the listener closed within 250 ms
            // (ConnectionStream::fill); those writing an answer finish it first.
            http.stop();
        });
        const vkf::server::SignalStop::Armed disarm(signal_stop);
        if (split != nullptr) {
            split->watch([&http, &served](const std::string& failure) {
                // /health says why meanwhile, and new requests fail naming the rank.
                served.failure.set(failure);
                std::this_thread::sleep_for(kFailedServerLinger);
                http.stop();
            });
        }
        ok = !armed || http.listen_after_bind();
    }
    if (split != nullptr) {
        engine.reset();  // its generations' sequences removed on every rank first
        split->finish(*stages);
    }
    if (!o.quiet) {
        fmt::print(stderr, "vkf-server: stopped\n");
    }
    return ok ? vkf::app::kExitOk : vkf::app::kExitFailure;
}

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-server", kAbout);
    Options options;
    vkf::server::declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] {
        const bool mpirun = vkf::dist::started_by_mpirun_with_ranks();
        vkf::server::resolve_api_key(options, std::getenv("VKF_API_KEY"));
        vkf::server::check_options(options, mpirun);
        if (mpirun) {
            return vkf::server::serve_ranks(options);
        }
        return options.devices.empty() ? vkf::server::serve(options, nullptr) : vkf::server::serve_devices(options);
    });
}
