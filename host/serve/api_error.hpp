#pragma once
// OpenAI's error object, the one shape every failed request gets from vkf-server:
//     {"error": {"message": "...", "type": "invalid_request_error", "param": "max_tokens", "code": "..."}}
// Clients (the openai SDKs, chat front ends) show `message` and branch on the status and
// `type`, so the message names the field and the limit, and the status says whose fault it is.

#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace vkf::serve {

class ApiError : public std::runtime_error {
public:
    ApiError(int status, std::string type, const std::string& message, std::optional<std::string> param = {},
             std::optional<std::string> code = {});
    int status() const { return status_; }
    const std::string& type() const { return type_; }
    const std::optional<std::string>& param() const { return param_; }
    const std::optional<std::string>& code() const { return code_; }
    nlohmann::ordered_json body() const;

private:
    int status_;
    std::string type_;
    std::optional<std::string> param_;
    std::optional<std::string> code_;
};

// 400: a field that is missing, of the wrong type or out of range; `param` names it.
ApiError invalid_request(const std::string& message, std::optional<std::string> param = {},
                         std::string code = "invalid_value");
// 400: the body is not JSON (the parser's line and column in the message).
ApiError malformed_json(const std::string& parser_message);
// 401: no or the wrong bearer token.
ApiError unauthorized();
// 403: a Host header the server does not answer (DNS rebinding), or a CORS preflight from an
// origin --cors-origin does not name.
ApiError host_not_allowed(const std::string& host);
ApiError origin_not_allowed(const std::string& origin);
// 404: no such route.
ApiError not_found(const std::string& method, const std::string& path);
// 404 for GET /v1/models/{id} naming a model the server does not serve (OpenAI's code).
ApiError model_not_found(const std::string& id);
// 405: a route asked with a method it does not take; `allow` lists those it takes.
ApiError method_not_allowed(const std::string& method, const std::string& path, const std::string& allow);
// 413: the body is over the server's limit.
ApiError body_too_large(std::uint64_t limit_bytes);
// 503: every slot and the queue are taken; the client should retry later.
ApiError overloaded(std::uint32_t slots, std::uint32_t queue);
// 415: a body that does not say it is JSON (`content_type`: the header, empty when absent).
ApiError unsupported_media_type(const std::string& content_type);
// 503: the server is stopping (SIGTERM or SIGINT): the request was not (fully) answered.
ApiError shutting_down();
// 499 (nginx's "client closed request"): the client left before its answer; nobody reads it,
// the metrics count it.
ApiError client_gone();
// 500: the engine failed (a device error); the message says what failed.
ApiError server_error(const std::string& message);

// The error object of a status httplib produced itself (an unreadable request line, a
// body over the limit) where no handler ran.
ApiError error_for_status(int status, std::uint64_t body_limit);

}  // namespace vkf::serve
