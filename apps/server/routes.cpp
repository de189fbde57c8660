#include "apps/server/routes.hpp"

#include "apps/server/generation_route.hpp"
#include "apps/server/page_route.hpp"
#include "apps/server/route_access.hpp"
#include "apps/server/tokenize_route.hpp"
#include "base/error.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/sse.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <functional>

namespace vkf::server {

using json = nlohmann::ordered_json;

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const serve::ApiError& error) {
    if (error.status() == 503) {
        res.set_header("Retry-After", "1");
    }
    send_json(res, error.status(), error.body());
}

// The kind label of vkf_errors_total: the error object's code, or its type.
std::string error_kind(const serve::ApiError& e) {
    return e.code().value_or(e.type());
}

OpenStreams::Token::~Token() {
    {
        const std::lock_guard lock(owner_.mutex_);
        --owner_.open_;
    }
    owner_.closed_.notify_all();
}

std::shared_ptr<OpenStreams::Token> OpenStreams::open() {
    const std::lock_guard lock(mutex_);
    ++open_;
    return std::make_shared<Token>(*this);
}

bool OpenStreams::wait_closed(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return closed_.wait_for(lock, timeout, [this] { return open_ == 0; });
}

namespace {

// Every route's body, once the request is admitted (route_access.hpp): an ApiError becomes
// its object, anything else a 500 naming it.
void guarded(Served& served, const Route& route, const httplib::Request& req, httplib::Response& res,
             const std::function<void()>& body) {
    try {
        admit(served.settings, req, route);
        body();
    } catch (const serve::ApiError& e) {
        send_error(res, e);
        served.counters->errors.add(1, fmt::format("kind=\"{}\"", error_kind(e)));
    } catch (const std::exception& e) {
        send_error(res, serve::server_error(e.what()));
        served.counters->errors.add(1, "kind=\"server_error\"");
    }
    served.counters->requests.add(1, fmt::format("route=\"{}\",status=\"{}\"", route.metric, res.status));
}

json embedding_value(const std::vector<float>& v, bool base64) {
    if (!base64) {
        return json(v);
    }
    std::string bytes(v.size() * sizeof(float), '\0');
    std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian hosts only (vkformer's)
    return serve::base64_encode(bytes);
}

void embeddings(Served& served, const httplib::Request& req, httplib::Response& res) {
    const serve::EmbeddingRequest r = serve::parse_embedding_request(req.body, served.settings.limits);
    ServedEncoder* enc = served.encoder;
    if (enc == nullptr) {
        throw serve::invalid_request(
            "this server has no embedding model (start vkf-server with a JinaBERT "
            "checkpoint as --embedding-model)",
            "model", "model_not_found");
    }
    std::vector<std::vector<std::uint32_t>> inputs = r.ids;
    for (std::size_t i = 0; i < r.texts.size(); ++i) {
        try {
            inputs.push_back(enc->tokenizer->encode(r.texts[i]));
        } catch (const Error& e) {
            throw serve::invalid_request("input[" + fmt::to_string(i) + "]: " + e.what(), "input");
        }
    }
    const std::uint32_t vocab = enc->encoder->config().vocab_size;
    std::uint64_t tokens = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::string param = "input[" + fmt::to_string(i) + "]";
        if (inputs[i].empty()) {
            throw serve::invalid_request(param + " encodes to no tokens", "input");
        }
        if (inputs[i].size() > enc->max_tokens) {
            throw serve::invalid_request(param + " is " + fmt::to_string(inputs[i].size()) + " tokens; the limit is " +
                                             fmt::to_string(enc->max_tokens),
                                         "input", "context_length_exceeded");
        }
        for (const std::uint32_t id : inputs[i]) {
            if (id >= vocab) {
                throw serve::invalid_request(param + " holds token id " + fmt::to_string(id) +
                                                 ", outside the vocabulary of " + fmt::to_string(vocab),
                                             "input");
            }
        }
        tokens += inputs[i].size();
    }
    json data = json::array();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        std::vector<float> v;
        {
            const std::lock_guard lock(enc->mutex);
            v = enc->encoder->encode(inputs[i], EncodeOptions{.pooling = enc->pooling, .normalize = true});
        }
        data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", embedding_value(v, r.base64)}});
    }
    served.counters->embedding_tokens.add(static_cast<double>(tokens));
    send_json(res, 200,
              {{"object", "list"},
               {"data", std::move(data)},
               {"model", enc->name},
               {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

json model_entry(const std::string& name) {
    return {{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "vkformer"}};
}

}  // namespace

RouteCounters::RouteCounters(serve::Metrics& m)
    : requests(m.declare_counter("vkf_requests_total", "HTTP requests answered, by route and status.")),
      errors(m.declare_counter("vkf_errors_total", "Requests that failed, by the error object's code.")),
      embedding_tokens(m.declare_counter("vkf_embedding_tokens_total", "Tokens run through the embedding model.")) {}

void install_routes(httplib::Server& http, Served& served) {
    served.counters.emplace(*served.metrics);

    http.set_payload_max_length(served.settings.max_body_bytes);
    install_access(http, served);

    http.Get(kPage.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kPage, req, res, [&] { serve_page(served, res); });
    });
    http.Get(kHealth.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kHealth, req, res, [&] {
            std::optional<std::string> why = served.failure.get();
            if (!why && served.decoder) {
                why = served.decoder->engine->failure();
            }
            if (why) {
                send_json(res, 503, {{"status", "error"}, {"error", *why}});
            } else {
                send_json(res, 200, {{"status", "ok"}});
            }
        });
    });
    http.Get(kMetrics.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kMetrics, req, res,
                [&] { res.set_content(served.metrics->render(), "text/plain; version=0.0.4; charset=utf-8"); });
    });
    http.Get(kModels.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kModels, req, res, [&] {
            json data = json::array();
            if (served.decoder) {
                data.push_back(model_entry(served.decoder->name));
            }
            if (served.encoder != nullptr) {
                data.push_back(model_entry(served.encoder->name));
            }
            send_json(res, 200, {{"object", "list"}, {"data", std::move(data)}});
        });
    });
    // OpenAI's model ids may hold '/' ("org/name"): the rest of the path is the id.
    http.Get(R"(/v1/models/(.+))", [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kModel, req, res, [&] {
            const std::string id = req.matches[1].str();
            const bool known = (served.decoder && served.decoder->name == id) ||
                               (served.encoder != nullptr && served.encoder->name == id);
            if (!known) {
                throw serve::model_not_found(id);
            }
            send_json(res, 200, model_entry(id));
        });
    });
    http.Post(kCompletions.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kCompletions, req, res, [&] { generation(served, serve::Endpoint::Completions, req, res); });
    });
    http.Post(kChat.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kChat, req, res, [&] { generation(served, serve::Endpoint::Chat, req, res); });
    });
    http.Post(kEmbeddings.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kEmbeddings, req, res, [&] { embeddings(served, req, res); });
    });
    http.Post(kTokenize.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kTokenize, req, res, [&] { tokenize(served, req, res); });
    });
    http.Post(kDetokenize.path, [&served](const httplib::Request& req, httplib::Response& res) {
        guarded(served, kDetokenize, req, res, [&] { detokenize(served, req, res); });
    });
}

}  // namespace vkf::server
