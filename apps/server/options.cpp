#include "apps/server/options.hpp"

#include "apps/common/layer_split.hpp"
#include "base/error.hpp"
#include "host/io/text_file.hpp"
#include "host/model/front_factory.hpp"
#include "host/model/layer_range.hpp"
#include "host/serve/access.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

namespace vkf::server {

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
                "requests handled at once, once read (default: --parallel + --queue + 8)");
    add_number(cli, "--header-timeout", "SECONDS", o.header_timeout,
               "a request's line and headers must arrive within this (default 10;\n"
               "from the connection's start or the request's first byte); else 408",
               true);
    add_number(cli, "--body-timeout", "SECONDS", o.body_timeout,
               "a request's body must arrive within this after its headers\n(default 30); else 408", true);
    add_integer(cli, "--max-connections", "N", o.max_connections, 1u,
                "connections sending a request (or idle between two) at once\n"
                "(default 256); more are refused (503) at once");
    add_parsed_option(cli, "--api-key", "KEY",
                      "answer only requests with 'Authorization: Bearer KEY' (else 401;\n"
                      "/health needs none); other users see it in ps: prefer\n"
                      "--api-key-file or the environment variable VKF_API_KEY",
                      [&o](const std::string& text) {
                          if (text.empty()) {
                              throw UsageError("--api-key: the key is empty");
                          }
                          o.api_key = text;
                      });
    add_text(cli, "--api-key-file", "FILE", o.api_key_file,
             "read the API key from FILE (surrounding white space dropped)");
    add_parsed_option(cli, "--allowed-host", "NAME",
                      "answer requests for this Host name too (repeatable; '*': any);\n"
                      "by default only the --host address's names are answered (on\n"
                      "127.0.0.1: localhost, 127.0.0.1, [::1]; on 0.0.0.0: any), others 403",
                      [&o](const std::string& text) {
                          if (const auto problem = vkf::serve::allowed_host_problem(text)) {
                              throw UsageError("--allowed-host: " + *problem);
                          }
                          o.allowed_hosts.push_back(text);
                      });
    add_parsed_option(cli, "--cors-origin", "ORIGIN",
                      "let web pages of ORIGIN (e.g. http://localhost:3000; '*': any)\n"
                      "read the answers in a browser (CORS; repeatable; default: none)",
                      [&o](const std::string& text) {
                          if (const auto problem = vkf::serve::origin_problem(text)) {
                              throw UsageError("--cors-origin: " + *problem);
                          }
                          o.cors_origins.push_back(text);
                      });
    add_text(cli, "--chat-format", "chatml|baichuan|jais|none", o.chat_format,
             "the chat prompt format (default: detected from the checkpoint's\n"
             "tokenizer_config.json / generation_config.json)");
    add_weight_format(cli, o.weights, "weight storage on the device (as vkf-run)");
    add_kv_flags(cli, o.kv, "KV-cache storage (default f16; as vkf-run)");
    add_integer(cli, "--chunk", "N", o.chunk, 1u, "most tokens one batch step runs (default 128)");
    add_device_options(cli, o.device);
    add_device_list(cli, o.devices);
    add_parsed_option(
        cli, "--split", "auto|N,N,...",
        "the layers of each device of --devices (or under mpirun of each\n"
        "rank), e.g. 12,12, or auto (default): by each one's memory budget\n"
        "for its weights and its KV blocks",
        [&o](const std::string& text) {
            if (text != "auto") {
                try {
                    parse_layer_counts(text);
                } catch (const Error&) {
                    throw UsageError("--split '" + text + "': give auto or the layers of every stage, e.g. 12,12");
                }
            }
            o.split = text;
        });
    add_number(cli, "--rank-timeout", "SECONDS", o.rank_timeout,
               "under mpirun: seconds without a message from a rank after which it\ncounts as failed (default 20)",
               true);
    cli.add_flag("--no-prefix-cache", o.no_prefix_cache,
                 "forget a finished request's KV blocks (default: keep them until the\n"
                 "pool needs them, for later prompts that start the same way)");
    cli.add_flag("--quiet", o.quiet, "print only the address it listens on");
}

void check_options(const Options& o, bool mpirun) {
    using app::UsageError;
    // httplib answers 500 on a socket numbered FD_SETSIZE (1024) or more; the process's own
    // files (models, devices) take some of the numbers below it.
    if (o.max_connections > 768) {
        throw UsageError(fmt::format("--max-connections {}: at most 768 (cpp-httplib's sockets stay below 1024)",
                                     o.max_connections));
    }
    split_counts(o);  // refuses bad text early
    if (o.devices.empty()) {
        if (o.split && !mpirun) {
            throw UsageError(
                "--split divides the layers over --devices (or over MPI ranks under mpirun -n R); give --devices");
        }
        return;
    }
    if (mpirun) {
        throw UsageError("under mpirun each rank runs on one device: give no --devices (--device picks it)");
    }
    if (o.device.device) {
        throw UsageError("--device and --devices: give one of them");
    }
    if (o.devices.size() < 2) {
        throw UsageError("--devices splits the model over at least two devices (the same one twice is two)");
    }
    if (!o.embedding_model.empty()) {
        throw UsageError("--devices splits a decoder over the devices: no --embedding-model");
    }
    app::check_split_stages(o.split, o.devices.size());
}

void resolve_api_key(Options& o, const char* env_key) {
    std::vector<std::string> sources;
    if (o.api_key) {
        sources.emplace_back("--api-key");
    }
    if (o.api_key_file) {
        sources.emplace_back("--api-key-file");
    }
    if (env_key != nullptr) {
        sources.emplace_back("VKF_API_KEY");
    }
    if (sources.size() > 1) {
        throw app::UsageError(fmt::format("the API key is given by {}: give it one way", fmt::join(sources, " and ")));
    }
    if (o.api_key_file) {
        const std::string text = read_text_file(*o.api_key_file);
        const auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
        const auto begin = std::find_if_not(text.begin(), text.end(), blank);
        const auto end = std::find_if_not(text.rbegin(), text.rend(), blank).base();
        if (begin >= end) {
            throw app::UsageError(fmt::format("--api-key-file {}: the file holds no key", *o.api_key_file));
        }
        o.api_key = std::string(begin, end);
    } else if (env_key != nullptr) {
        if (*env_key == '\0') {
            throw app::UsageError("VKF_API_KEY is set but empty: set the key, or unset it to run without one");
        }
        o.api_key = env_key;
    }
    if (o.api_key &&
        std::any_of(o.api_key->begin(), o.api_key->end(), [](unsigned char c) { return c <= ' ' || c == 0x7f; })) {
        throw app::UsageError(
            fmt::format("the API key ({}) holds a space or a control character, which an "
                        "Authorization header cannot carry",
                        sources.front()));
    }
}

std::vector<std::uint32_t> split_counts(const Options& o) {
    return app::layer_split_counts(o.split);
}

DecoderSetup decoder_setup(const Options& o, const ModelConfig& config, std::uint32_t ranks) {
    DecoderSetup d;
    d.ctx_tokens = o.ctx.value_or(std::min<std::uint32_t>(2048, config.max_seq_len));
    const std::uint32_t block = BatchOptions{}.block_size;
    const std::uint32_t window = app::run_window(o.window, config);
    // With a window a sequence's positions count on past its ring: only the prompt is
    // bounded (--max-prompt-tokens), not prompt plus answer.
    d.sequence_tokens = window != 0 ? std::numeric_limits<std::int32_t>::max() : d.ctx_tokens;
    d.blocks = o.ctx_blocks.value_or(o.parallel * ((d.ctx_tokens + block - 1) / block));
    d.batch = BatchOptions{.max_tokens = d.blocks * block,
                           .max_sequence_tokens = d.ctx_tokens,
                           .max_sequences = o.parallel,
                           .chunk = o.chunk,
                           .kv_dtype = o.kv.dense,
                           .kv_k_quant = o.kv.k_quant(),
                           .kv_v_quant = o.kv.v_quant(),
                           .window = window,
                           .cache_prefixes = !o.no_prefix_cache && window == 0};
    // What Model's constructor checks against the device's budget, and what --split auto
    // divides by under mpirun: the batch's whole KV pool and its sequences' tables.
    d.model =
        ModelOptions{.weights = o.weights, .session = batch_session_size(config, stage_batch_options(d.batch, ranks))};
    return d;
}

}  // namespace vkf::server
