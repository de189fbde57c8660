#include "host/serve/api_error.hpp"

#include <fmt/format.h>

#include <utility>

namespace vkf::serve {

ApiError::ApiError(int status, std::string type, const std::string& message, std::optional<std::string> param,
                   std::optional<std::string> code)
    : std::runtime_error(message),
      status_(status),
      type_(std::move(type)),
      param_(std::move(param)),
      code_(std::move(code)) {}

nlohmann::ordered_json ApiError::body() const {
    const auto optional_text = [](const std::optional<std::string>& s) {
        return s ? nlohmann::ordered_json(*s) : nlohmann::ordered_json(nullptr);
    };
    return {{"error",
             {{"message", what()}, {"type", type_}, {"param", optional_text(param_)}, {"code", optional_text(code_)}}}};
}

ApiError invalid_request(const std::string& message, std::optional<std::string> param, std::string code) {
    return {400, "invalid_request_error", message, std::move(param), std::move(code)};
}

ApiError malformed_json(const std::string& parser_message) {
    return {400, "invalid_request_error", "the request body is not valid JSON: " + parser_message, std::nullopt,
            "invalid_json"};
}

ApiError unauthorized() {
    return {401, "authentication_error",
            "a valid API key is required: send the header 'Authorization: Bearer <key>' with the key vkf-server "
            "was started with (--api-key, --api-key-file or VKF_API_KEY)",
            std::nullopt, "invalid_api_key"};
}

ApiError host_not_allowed(const std::string& host) {
    return {403, "invalid_request_error",
            host.empty() ? std::string("the request has no Host header")
                         : fmt::format("this server does not answer requests for the host '{}' (the Host header); "
                                       "start vkf-server with --allowed-host to add a name",
                                       host),
            std::nullopt, "host_not_allowed"};
}

ApiError origin_not_allowed(const std::string& origin) {
    return {403, "invalid_request_error",
            fmt::format("the origin '{}' may not use this server from a browser (start vkf-server with --cors-origin "
                        "to allow it)",
                        origin),
            std::nullopt, "origin_not_allowed"};
}

ApiError method_not_allowed(const std::string& method, const std::string& path, const std::string& allow) {
    return {405, "invalid_request_error", fmt::format("{} takes {}, not {}", path, allow, method), std::nullopt,
            "method_not_allowed"};
}

ApiError unsupported_media_type(const std::string& content_type) {
    return {415, "invalid_request_error",
            content_type.empty()
                ? std::string("the request body has no Content-Type; send it as 'Content-Type: application/json'")
                : fmt::format("the request body's Content-Type is '{}'; vkf-server reads only application/json",
                              content_type),
            std::nullopt, "unsupported_media_type"};
}

ApiError shutting_down() {
    return {503, "server_error", "the server is shutting down (SIGTERM or SIGINT); the answer was not finished",
            std::nullopt, "server_shutting_down"};
}

ApiError client_gone() {
    return {499, "invalid_request_error", "the client closed the connection before the answer", std::nullopt,
            "client_closed_request"};
}

ApiError not_found(const std::string& method, const std::string& path) {
    return {404, "invalid_request_error", "no route " + method + " " + path, std::nullopt, "unknown_url"};
}

ApiError model_not_found(const std::string& id) {
    return {404, "invalid_request_error", fmt::format("the model '{}' does not exist on this server", id), "model",
            "model_not_found"};
}

ApiError body_too_large(std::uint64_t limit_bytes) {
    return {413, "invalid_request_error",
            "the request body is over the server's limit of " + fmt::to_string(limit_bytes) + " bytes (--max-body)",
            std::nullopt, "request_too_large"};
}

ApiError overloaded(std::uint32_t slots, std::uint32_t queue) {
    return {503, "server_error",
            "the server is busy: all " + fmt::to_string(slots) + " slots (--parallel) and " + fmt::to_string(queue) +
                " queue places (--queue) are taken; retry later",
            std::nullopt, "server_overloaded"};
}

ApiError server_error(const std::string& message) {
    return {500, "server_error", message, std::nullopt, {}};
}

ApiError error_for_status(int status, std::uint64_t body_limit) {
    switch (status) {
        case 413:
            return body_too_large(body_limit);
        case 404:
            return {404, "invalid_request_error", "not found", std::nullopt, "unknown_url"};
        case 400:
            return invalid_request("the HTTP request could not be read");
        default:
            if (status >= 500) {
                return server_error("HTTP status " + fmt::to_string(status));
            }
            return {status, "invalid_request_error", "HTTP status " + fmt::to_string(status), std::nullopt, {}};
    }
}

}  // namespace vkf::serve
