#include "host/serve/api_error.hpp"

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
            "was started with (--api-key)",
            std::nullopt, "invalid_api_key"};
}

ApiError not_found(const std::string& method, const std::string& path) {
    return {404, "invalid_request_error", "no route " + method + " " + path, std::nullopt, "unknown_url"};
}

ApiError body_too_large(std::uint64_t limit_bytes) {
    return {413, "invalid_request_error",
            "the request body is over the server's limit of " + std::to_string(limit_bytes) + " bytes (--max-body)",
            std::nullopt, "request_too_large"};
}

ApiError overloaded(std::uint32_t slots, std::uint32_t queue) {
    return {503, "server_error",
            "the server is busy: all " + std::to_string(slots) + " slots (--parallel) and " + std::to_string(queue) +
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
                return server_error("HTTP status " + std::to_string(status));
            }
            return {status, "invalid_request_error", "HTTP status " + std::to_string(status), std::nullopt, {}};
    }
}

}  // namespace vkf::serve
