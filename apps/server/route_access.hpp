#pragma once
// Who may use which of vkf-server's routes, on the HTTP side (the rules themselves:
// host/serve/access.hpp): a request is checked for its Host, its key and its body's media
// type before the route's own work, after httplib has read its body (a refusal that left a
// body unread would have the connection's next request start inside it). CORS preflights,
// the CORS headers of every answer, 405 for a method a route does not take, and an error
// object for the statuses httplib sets itself are installed here too.

#include "apps/server/routes.hpp"

#include <httplib.h>

#include <string_view>

namespace vkf::server {

struct Route {
    const char* metric;  // its label in vkf_requests_total
    const char* path;
    const char* allow;  // the methods it takes, as the Allow header lists them
    bool json_body;     // a POST whose body must be JSON
    bool needs_key;     // with an API key: every route but / and /health (load balancers probe it)
};

// The chat page asks for the key itself: a browser cannot send one just to open it.
inline constexpr Route kPage{"page", "/", "GET, HEAD, OPTIONS", false, false};
inline constexpr Route kHealth{"health", "/health", "GET, HEAD, OPTIONS", false, false};
inline constexpr Route kMetrics{"metrics", "/metrics", "GET, HEAD, OPTIONS", false, true};
inline constexpr Route kModels{"models", "/v1/models", "GET, HEAD, OPTIONS", false, true};
// GET /v1/models/{id}: a path ending in '/' takes any non-empty rest (find_route).
inline constexpr Route kModel{"model", "/v1/models/", "GET, HEAD, OPTIONS", false, true};
inline constexpr Route kCompletions{"completions", "/v1/completions", "POST, OPTIONS", true, true};
inline constexpr Route kChat{"chat", "/v1/chat/completions", "POST, OPTIONS", true, true};
inline constexpr Route kEmbeddings{"embeddings", "/v1/embeddings", "POST, OPTIONS", true, true};
// llama-server's: text to token ids and back (apps/server/tokenize_route.hpp).
inline constexpr Route kTokenize{"tokenize", "/tokenize", "POST, OPTIONS", true, true};
inline constexpr Route kDetokenize{"detokenize", "/detokenize", "POST, OPTIONS", true, true};

// The route at `path`, or null.
const Route* find_route(std::string_view path);

// Throws the ApiError a request to `route` gets before any work: 403 for a Host the server
// does not answer, 401 without the key, 415 for a body that does not say it is JSON.
void admit(const ServerSettings& settings, const httplib::Request& req, const Route& route);

// OPTIONS, the CORS headers, 405s and httplib's own statuses as error objects.
void install_access(httplib::Server& http, Served& served);

}  // namespace vkf::server
