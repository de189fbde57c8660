// vkf-server: an OpenAI-compatible HTTP server (completions, chat completions, streaming,
// embeddings, /v1/models, /health, /metrics) over a decoder checkpoint run as a continuously
// batched session, and a JinaBERT encoder for embeddings. docs/DESIGN.md "Server" describes
// its threads.

#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/options.hpp"
#include "apps/server/engine.hpp"
#include "apps/server/routes.hpp"
#include "host/io/json.hpp"
#include "host/io/text_file.hpp"
#include "host/model/batch.hpp"
#include "host/model/encoder.hpp"
#include "host/spec/encoder_config.hpp"
#include "host/util/format.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <csignal>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace {

constexpr const char* kAbout =
    "Serves a decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais) through OpenAI's HTTP API:\n"
    "POST /v1/completions and /v1/chat/completions (streamed as server-sent events with\n"
    "\"stream\": true), GET /v1/models, /health and /metrics (Prometheus). Requests join one\n"
    "running batch (--parallel sequences; --queue more wait; past that: 503). A JinaBERT\n"
    "checkpoint (as --model or --embedding-model) serves POST /v1/embeddings.\n"
    "It listens on 127.0.0.1 unless --host says otherwise; stop it with Ctrl-C.\n";

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
    std::optional<std::string> api_key;
    std::optional<std::string> chat_format;
    std::optional<vkf::WeightFormat> weights;
    vkf::DType kv = vkf::DType::F16;
    std::uint32_t chunk = 128;
    vkf::app::DeviceOptions device;
    bool quiet = false;
};

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--model", "DIR", o.model, "the checkpoint to serve (a decoder, or a JinaBERT encoder)")->required();
    add_text(cli, "--embedding-model", "DIR", o.embedding_model, "a JinaBERT checkpoint for /v1/embeddings");
    add_text(cli, "--tokenizer", "FILE", o.tokenizer, "the decoder's tokenizer.json (default: the model directory's)");
    add_text(cli, "--name", "NAME", o.name, "the model's name in responses (default: the directory's name)");
    add_text(cli, "--host", "ADDR", o.host, "address to listen on (default 127.0.0.1: this machine only)");
    add_integer(cli, "--port", "N", o.port, 0u, "port (default 8080; 0: any free port, printed)");
    add_integer(cli, "--parallel", "N", o.parallel, 1u, "sequences generated at once (default 4)");
    add_integer(cli, "--queue", "N", o.queue, 0u, "requests that may wait for a slot (default 16); more get 503");
    add_integer(cli, "--ctx", "N", o.ctx, 2u,
                "tokens one sequence holds, prompt and answer (default: 2048 or the\nmodel's max_seq_len)");
    add_integer(cli, "--ctx-blocks", "N", o.ctx_blocks, 1u,
                "KV-cache blocks of 16 tokens for all sequences (default: room for\n--parallel full sequences)");
    vkf::app::add_window(cli, o.window,
                         "local attention: each token sees the W tokens before it (default:\n"
                         "the model's, MPT sliding_window_size; 0: all); a sequence then keeps\n"
                         "only the blocks its window sees and may go on past --ctx");
    add_integer(cli, "--max-prompt-tokens", "N", o.max_prompt_tokens, 1u, "longest prompt accepted (default: --ctx)");
    add_integer(cli, "--max-tokens", "N", o.max_tokens, 1u, "largest max_tokens accepted (default: --ctx)");
    add_integer(cli, "--max-n", "N", o.max_n, 1u, "largest n (choices per request) accepted (default 4)");
    add_parsed_option(cli, "--max-body", "SIZE", "largest request body (default 1M); larger: 413",
                      [&o](const std::string& text) { o.max_body = parse_size("--max-body", text); });
    add_integer(cli, "--http-threads", "N", o.http_threads, 1u,
                "HTTP worker threads (default: --parallel + --queue + 8)");
    add_parsed_option(cli, "--api-key", "KEY", "answer only requests with 'Authorization: Bearer KEY' (else 401)",
                      [&o](const std::string& text) {
                          if (text.empty()) {
                              throw UsageError("--api-key: the key is empty");
                          }
                          o.api_key = text;
                      });
    add_text(cli, "--chat-format", "chatml|baichuan|jais|none", o.chat_format,
             "the chat prompt format (default: detected from the checkpoint's\n"
             "tokenizer_config.json / generation_config.json)");
    add_weight_format(cli, o.weights, "weight storage on the device (as vkf-run)");
    add_choice(cli, "--kv", o.kv, {{"f32", vkf::DType::F32}, {"f16", vkf::DType::F16}},
               "KV-cache storage (default f16)");
    add_integer(cli, "--chunk", "N", o.chunk, 1u, "most tokens one batch step runs (default 128)");
    add_device_options(cli, o.device);
    cli.add_flag("--quiet", o.quiet, "print only the address it listens on");
}

bool is_encoder(const std::string& dir) {
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

int serve(const Options& o) {
    // The signal thread owns SIGINT and SIGTERM: every thread started from here blocks them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    std::optional<vkf::text::ChatFormat> chat_format;
    if (o.chat_format) {
        chat_format = vkf::text::parse_chat_format(*o.chat_format);
        if (!chat_format) {
            throw vkf::app::UsageError("--chat-format is chatml, baichuan, jais or none, not '" + *o.chat_format + "'");
        }
    }
    const bool model_is_encoder = is_encoder(o.model);
    if (model_is_encoder && !o.embedding_model.empty()) {
        throw vkf::app::UsageError("--model is an encoder already; --embedding-model is for a decoder's server");
    }
    const std::string encoder_dir = model_is_encoder ? o.model : o.embedding_model;

    vkf::Context ctx(o.device.context_options());
    vkf::serve::Metrics metrics;
    vkf::server::Served served;
    served.metrics = &metrics;
    served.settings.api_key = o.api_key;
    served.settings.max_body_bytes = o.max_body;
    served.settings.limits.max_n = o.max_n;

    std::unique_ptr<vkf::Model> model;
    std::unique_ptr<vkf::Batch> batch;
    std::optional<vkf::text::Tokenizer> tokenizer;
    std::unique_ptr<vkf::server::Engine> engine;
    if (!model_is_encoder) {
        tokenizer = vkf::app::load_model_tokenizer(o.model, o.tokenizer);
        const vkf::ModelConfig config = vkf::read_model_config(std::filesystem::path(o.model) / "config.json");
        const std::uint32_t ctx_tokens = o.ctx.value_or(std::min<std::uint32_t>(2048, config.max_seq_len));
        const std::uint32_t block = vkf::BatchOptions{}.block_size;
        const std::uint32_t window = vkf::app::run_window(o.window, config);
        // With a window a sequence's positions count on past its ring: only the prompt is
        // bounded (--max-prompt-tokens), not prompt plus answer.
        const std::uint32_t sequence_tokens = window != 0 ? std::numeric_limits<std::int32_t>::max() : ctx_tokens;
        const std::uint32_t blocks = o.ctx_blocks.value_or(o.parallel * ((ctx_tokens + block - 1) / block));
        model = std::make_unique<vkf::Model>(
            ctx, o.model,
            vkf::ModelOptions{.weights = o.weights,
                              .session = {.max_tokens = blocks * block, .chunk = o.chunk, .kv_dtype = o.kv}});
        batch = std::make_unique<vkf::Batch>(*model, vkf::BatchOptions{.max_tokens = blocks * block,
                                                                       .max_sequence_tokens = ctx_tokens,
                                                                       .max_sequences = o.parallel,
                                                                       .chunk = o.chunk,
                                                                       .kv_dtype = o.kv,
                                                                       .window = window});
        // The steps a first request takes (its prompt in chunks, one sequence decoding) are
        // recorded, their pipelines made, before the server listens: the first request's
        // time to first token holds no compile. Other mixes record their steps when they come.
        const vkf::PreparationStats prepared = batch->prepare(batch->sequence_shapes(o.chunk));
        if (!o.quiet) {
            fmt::print(stderr, "vkf-server: prepare: {} pipelines in {:.3f} s ({} made on {} threads)\n",
                       prepared.pipelines, prepared.seconds, prepared.created, prepared.threads);
        }
        engine = std::make_unique<vkf::server::Engine>(*batch, *tokenizer, metrics,
                                                       vkf::server::EngineOptions{o.parallel, o.queue});
        served.settings.limits.max_tokens = o.max_tokens.value_or(ctx_tokens);
        served.decoder = vkf::server::ServedDecoder{
            .name = o.name.empty() ? default_name(o.model) : o.name,
            .engine = engine.get(),
            .tokenizer = &*tokenizer,
            .vocab_size = model->config().vocab_size,
            .chat_format = chat_format.value_or(vkf::text::detect_chat_format(o.model)),
            .eos_ids = model->config().eos_token_ids,
            .sequence_tokens = sequence_tokens,
            .max_prompt_tokens = std::min(o.max_prompt_tokens.value_or(ctx_tokens), ctx_tokens)};
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

    httplib::Server http;
    const std::uint32_t threads = o.http_threads.value_or(o.parallel + o.queue + 8);
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
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

    std::thread signal_thread([&http, signals] {
        int signal = 0;
        sigwait(&signals, &signal);
        http.stop();
    });
    const bool ok = http.listen_after_bind();
    if (signal_thread.joinable()) {
        // listen ended without a signal (an error): wake the signal thread so it can be joined.
        pthread_kill(signal_thread.native_handle(), SIGTERM);
        signal_thread.join();
    }
    if (!o.quiet) {
        fmt::print(stderr, "vkf-server: stopped\n");
    }
    return ok ? vkf::app::kExitOk : vkf::app::kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-server", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] { return serve(options); });
}
