#pragma once
// Who may use vkf-server, decided from a request's headers before any work: the Host it was
// sent to, the browser origin it comes from, its API key and its body's media type. A web page
// in the user's browser can send requests to a server on 127.0.0.1 (and, through DNS
// rebinding, read the answers with its own name as the Host), so by default the server
// answers only the Host names of the address it listens on, lets no other origin read its
// answers (no CORS headers unless --cors-origin names it) and parses a body only when it says
// it is JSON, which a page cannot send cross-origin without asking first (CORS preflight).
// Plain functions over text: unit-tested without sockets.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::serve {

// The Host header values a server answers (names compared without case, any port).
struct HostPolicy {
    bool any = false;                // every Host: a wildcard address without --allowed-host
    std::vector<std::string> names;  // lower case; IPv6 addresses in brackets, as in a Host header
};

// The policy of a server listening on `address` (--host) with `allowed` extra names
// (--allowed-host; "*": any Host). On a loopback address: localhost, 127.0.0.1, [::1] and the
// address; on a wildcard address (0.0.0.0, ::): any Host, or only loopback's names and
// `allowed` when some are given; on another address: that address.
HostPolicy host_policy(const std::string& address, const std::vector<std::string>& allowed);

// Checks an --allowed-host value: "*", a name or an address, without a port; the reason it
// is refused, or nullopt.
std::optional<std::string> allowed_host_problem(std::string_view name);

// Whether a request with this Host header (absent: nullopt) may be answered.
bool host_allowed(const HostPolicy& policy, const std::optional<std::string_view>& host);

// The origins whose pages may read the server's answers (--cors-origin; "*": every origin).
struct CorsPolicy {
    std::vector<std::string> origins;
    bool enabled() const { return !origins.empty(); }
    // Whether a request's Origin header names an allowed origin.
    bool allows(std::string_view origin) const;
};

// Checks an --cors-origin value: "*", "null", or scheme://host[:port] without a path; the
// reason it is refused, or nullopt.
std::optional<std::string> origin_problem(std::string_view origin);

// The key of an "Authorization: Bearer KEY" header: the scheme in any case (RFC 7235), one
// or more spaces, then the key. nullopt for another scheme or no key.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// Compares the whole key whatever the first difference, so the time taken says nothing
// about how much of a guess was right.
bool same_key(std::string_view a, std::string_view b);

// Whether a Content-Type header names JSON: application/json, in any case, with or without
// parameters ("; charset=utf-8").
bool is_json_media_type(std::string_view content_type);

}  // namespace vkf::serve
