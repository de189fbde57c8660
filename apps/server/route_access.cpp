#include "apps/server/route_access.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>

namespace vkf::server {
namespace {

constexpr std::array<const Route*, 10> kRoutes = {&kPage,        &kHealth, &kMetrics,    &kModels,   &kModel,
                                                  &kCompletions, &kChat,   &kEmbeddings, &kTokenize, &kDetokenize};

std::optional<std::string> host_header(const httplib::Request& req) {
    if (!req.has_header("Host")) {
        return std::nullopt;
    }
    return req.get_header_value("Host");
}

void count(Served& served, const std::string& route, const httplib::Response& res) {
    served.counters->requests.add(1, fmt::format("route=\"{}\",status=\"{}\"", route, res.status));
}

void refuse(Served& served, const std::string& route, httplib::Response& res, const serve::ApiError& e) {
    send_error(res, e);
    served.counters->errors.add(1, fmt::format("kind=\"{}\"", error_kind(e)));
    count(served, route, res);
}

// Whether `route` takes `method` (its Allow list names it).
bool takes(const Route& route, const std::string& method) {
    const std::string_view allow = route.allow;
    for (std::size_t start = 0; start < allow.size();) {
        const std::size_t end = std::min(allow.find(", ", start), allow.size());
        if (allow.substr(start, end - start) == method) {
            return true;
        }
        start = end + 2;
    }
    return false;
}

}  // namespace

const Route* find_route(std::string_view path) {
    for (const Route* route : kRoutes) {
        const std::string_view own = route->path;
        // A prefix route ends in '/' after a name ("/v1/models/"); the page's "/" is exact.
        const bool prefix = own.size() > 1 && own.ends_with('/');
        if (path == own || (prefix && path.size() > own.size() && path.starts_with(own))) {
            return route;
        }
    }
    return nullptr;
}

void admit(const ServerSettings& settings, const httplib::Request& req, const Route& route) {
    const std::optional<std::string> host = host_header(req);
    if (!serve::host_allowed(settings.hosts, host)) {
        throw serve::host_not_allowed(host.value_or(""));
    }
    if (route.needs_key && settings.api_key) {
        const std::string authorization = req.get_header_value("Authorization");
        const std::optional<std::string_view> key = serve::bearer_token(authorization);
        if (!key || !serve::same_key(*key, *settings.api_key)) {
            throw serve::unauthorized();
        }
    }
    if (route.json_body) {
        const std::string type = req.get_header_value("Content-Type");
        if (!serve::is_json_media_type(type)) {
            throw serve::unsupported_media_type(type);
        }
    }
}

void install_access(httplib::Server& http, Served& served) {
    // A browser asks before a cross-origin POST with a JSON body or an Authorization header
    // (CORS preflight), sending no key: only an origin --cors-origin names is told yes.
    http.Options(".*", [&served](const httplib::Request& req, httplib::Response& res) {
        const Route* route = find_route(req.path);
        const std::string origin = req.get_header_value("Origin");
        const std::optional<std::string> host = host_header(req);
        if (!serve::host_allowed(served.settings.hosts, host)) {
            return refuse(served, "preflight", res, serve::host_not_allowed(host.value_or("")));
        }
        if (route == nullptr) {
            return refuse(served, "preflight", res, serve::not_found(req.method, req.path));
        }
        if (!origin.empty()) {
            if (!served.settings.cors.allows(origin)) {
                return refuse(served, "preflight", res, serve::origin_not_allowed(origin));
            }
            res.set_header("Access-Control-Allow-Methods", route->allow);
            res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
            res.set_header("Access-Control-Max-Age", "600");
        }
        res.set_header("Allow", route->allow);
        res.status = 204;
        count(served, "preflight", res);
    });
    // Every answer, errors included, tells a browser whether the page that asked may read it;
    // without --cors-origin none may (no header at all).
    http.set_post_routing_handler([&served](const httplib::Request& req, httplib::Response& res) {
        if (!served.settings.cors.enabled()) {
            return;
        }
        res.set_header("Vary", "Origin");
        const std::string origin = req.get_header_value("Origin");
        if (!origin.empty() && served.settings.cors.allows(origin)) {
            res.set_header("Access-Control-Allow-Origin", origin);
        }
    });
    // Statuses httplib sets itself (413 over --max-body, 404 no route, 400 unreadable) get
    // an error object too; a handler's own error already has one. A known path asked with
    // a method it does not take is 405 with Allow, and a Host the server does not answer
    // is 403 whatever the path.
    http.set_error_handler(
        httplib::Server::HandlerWithResponse([&served](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty() || res.is_chunked_content_provider_) {
                return httplib::Server::HandlerResponse::Unhandled;
            }
            const std::optional<std::string> host = host_header(req);
            const Route* route = find_route(req.path);
            std::optional<serve::ApiError> e;
            if (!req.method.empty() && !serve::host_allowed(served.settings.hosts, host)) {
                e = serve::host_not_allowed(host.value_or(""));
            } else if (route != nullptr && !req.method.empty() && !takes(*route, req.method) &&
                       (res.status == 404 || res.status == 400)) {
                e = serve::method_not_allowed(req.method, req.path, route->allow);
                res.set_header("Allow", route->allow);
            } else if (res.status == 404) {
                e = serve::not_found(req.method, req.path);
            } else {
                e = serve::error_for_status(res.status, served.settings.max_body_bytes);
            }
            res.status = e->status();
            send_json(res, res.status, e->body());
            served.counters->errors.add(1, fmt::format("kind=\"{}\"", error_kind(*e)));
            count(served, "none", res);
            return httplib::Server::HandlerResponse::Handled;
        }));
}

}  // namespace vkf::server
