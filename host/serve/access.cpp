#include "host/serve/access.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace vkf::serve {
namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

std::string_view trim(std::string_view text) {
    const auto blank = [](char c) { return c == ' ' || c == '\t'; };
    while (!text.empty() && blank(text.front())) {
        text.remove_prefix(1);
    }
    while (!text.empty() && blank(text.back())) {
        text.remove_suffix(1);
    }
    return text;
}

bool all_digits(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// An address as a Host header writes it: IPv6 in brackets.
std::string host_form(std::string_view address) {
    const std::string a = lower(address);
    if (std::count(a.begin(), a.end(), ':') >= 2 && a.front() != '[') {
        return "[" + a + "]";
    }
    return a;
}

bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

bool is_wildcard(const std::string& host) {
    return host.empty() || host == "0.0.0.0" || host == "[::]";
}

// The name part of a Host header ("[::1]:8080" -> "[::1]"); nullopt when it is not one.
std::optional<std::string> host_name(std::string_view host) {
    host = trim(host);
    std::string_view name = host;
    std::string_view port;
    if (host.starts_with('[')) {
        const std::size_t close = host.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        name = host.substr(0, close + 1);
        const std::string_view rest = host.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') {
                return std::nullopt;
            }
            port = rest.substr(1);
            if (!all_digits(port)) {
                return std::nullopt;
            }
        }
    } else if (const std::size_t colon = host.find(':'); colon != std::string_view::npos) {
        name = host.substr(0, colon);
        port = host.substr(colon + 1);
        if (!all_digits(port)) {
            return std::nullopt;
        }
    }
    if (name.empty()) {
        return std::nullopt;
    }
    return lower(name);
}

}  // namespace

HostPolicy host_policy(const std::string& address, const std::vector<std::string>& allowed) {
    HostPolicy policy;
    const std::string listening = host_form(address);
    for (const std::string& name : allowed) {
        if (name == "*") {
            policy.any = true;
        } else {
            policy.names.push_back(host_form(name));
        }
    }
    if (is_wildcard(listening) && allowed.empty()) {
        policy.any = true;
    }
    if (is_loopback(listening) || is_wildcard(listening)) {
        for (const char* name : {"localhost", "127.0.0.1", "[::1]"}) {
            policy.names.emplace_back(name);
        }
    }
    if (!is_wildcard(listening)) {
        policy.names.push_back(listening);
    }
    return policy;
}

bool host_allowed(const HostPolicy& policy, const std::optional<std::string_view>& host) {
    if (policy.any) {
        return true;
    }
    if (!host) {
        return false;
    }
    const std::optional<std::string> name = host_name(*host);
    return name && std::find(policy.names.begin(), policy.names.end(), *name) != policy.names.end();
}

std::optional<std::string> allowed_host_problem(std::string_view name) {
    if (name == "*") {
        return std::nullopt;
    }
    if (name.empty() || name.find_first_of("/ \t") != std::string_view::npos) {
        return fmt::format("'{}' is not a host name or address", name);
    }
    const std::optional<std::string> parsed = host_name(name);
    if (std::count(name.begin(), name.end(), ':') == 1 || (name.starts_with('[') && parsed != lower(name))) {
        return fmt::format("'{}' holds a port: give the name alone (every port of it is allowed)", name);
    }
    return std::nullopt;
}

bool CorsPolicy::allows(std::string_view origin) const {
    const std::string o = lower(trim(origin));
    return !o.empty() && std::any_of(origins.begin(), origins.end(), [&o](const std::string& allowed) {
        return allowed == "*" || lower(allowed) == o;
    });
}

std::optional<std::string> origin_problem(std::string_view origin) {
    if (origin == "*" || origin == "null") {
        return std::nullopt;
    }
    const std::size_t scheme_end = origin.find("://");
    if (scheme_end == std::string_view::npos || scheme_end == 0) {
        return fmt::format("'{}' is not an origin: give scheme://host[:port], e.g. http://localhost:3000", origin);
    }
    const std::string_view rest = origin.substr(scheme_end + 3);
    if (rest.empty()) {
        return fmt::format("'{}' names no host", origin);
    }
    const std::size_t path = rest.find_first_of("/?# \t");
    if (path != std::string_view::npos) {
        return fmt::format("an origin is scheme://host[:port] with no path: '{}', not '{}'",
                           origin.substr(0, scheme_end + 3 + path), origin);
    }
    return std::nullopt;
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
    authorization = trim(authorization);
    const std::size_t space = authorization.find_first_of(" \t");
    if (space == std::string_view::npos || lower(authorization.substr(0, space)) != "bearer") {
        return std::nullopt;
    }
    const std::string_view token = trim(authorization.substr(space));
    if (token.empty()) {
        return std::nullopt;
    }
    return token;
}

bool same_key(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
    }
    return diff == 0;
}

bool is_json_media_type(std::string_view content_type) {
    return lower(trim(content_type.substr(0, content_type.find(';')))) == "application/json";
}

}  // namespace vkf::serve
