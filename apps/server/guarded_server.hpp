#pragma once
// vkf-server's HTTP transport: a cpp-httplib server that reads every request itself, under
// deadlines and limits, before httplib parses and routes it. Debian's cpp-httplib 0.11.4 on
// its own (measured, issue 40): reads a chunked body and inflates a gzip one without a limit;
// gives each connection a pool thread for as long as the client keeps sending a byte within
// each 5 s read timeout, so 24 clients sending a byte a second stopped every answer; and drops
// a request pipelined behind another in one send.
//
// Here each connection has its own thread (so a slow one holds no other's) and goes through:
//  - a request's line and headers within `header_timeout` (from the connection's start, or
//    from the first byte of a next request on a kept-alive connection), else 408 and closed;
//  - its body within `body_timeout` from the end of the headers; Content-Length, chunked and
//    gzip/deflate bodies all at most `max_body` bytes, decoded, refused (413) as soon as they
//    pass it, and the connection closed without reading the rest;
//  - at most `max_connections` connections reading a request (or idle between two) at once:
//    past that a new connection gets 503 and is closed at once;
//  - at most `handlers` requests handled at once (a request waits for one once it is read).
// httplib then parses the head and the decoded body from what was read: its own socket reads,
// timeouts and decoders never run. Bytes after a request (pipelined ones) wait for the next
// turn of the connection's loop. Writing the response has httplib's write timeout per write
// (a slow reader), and no deadline: a stream may last minutes.

#include "host/serve/api_error.hpp"
#include "host/serve/metrics.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <semaphore>

namespace vkf::server {

struct TransportLimits {
    std::uint64_t max_body = 1 << 20;
    std::chrono::milliseconds header_timeout{10'000};
    std::chrono::milliseconds body_timeout{30'000};
    std::uint32_t max_connections = 256;
    std::uint32_t handlers = 28;
};

class GuardedServer : public httplib::Server {
public:
    // Counts at `metrics`: vkf_http_reading_connections (gauge), vkf_http_refused_total by reason.
    GuardedServer(const TransportLimits& limits, serve::Metrics& metrics);
    // httplib's, after raising the listening socket's backlog from the library's 5 (fixed when
    // Debian compiled it) to SOMAXCONN: with 5, a burst of connections (60 slow clients cut
    // at once and coming back) overflowed it, and a connection whose SYN was dropped waited
    // a second for its retry, /health probes included. Hides Server's (not virtual): call it
    // on a GuardedServer.
    bool listen_after_bind();
    // The socket of the connection whose request the calling thread handles (a route
    // handler's: each connection's requests are handled on its own thread); INVALID_SOCKET
    // elsewhere. httplib 0.11.4 gives a handler no way to learn that its client left.
    static socket_t current_socket();

private:
    bool process_and_close_socket(socket_t sock) override;
    void serve_connection(socket_t sock);
    void refused(const serve::ApiError& error);
    void reading_changed(int delta);

    TransportLimits limits_;
    serve::Metrics::Gauge reading_connections_;
    serve::Metrics::Counter refused_;  // by reason
    std::atomic<std::uint32_t> reading_ = 0;
    std::counting_semaphore<> handlers_;
};

}  // namespace vkf::server
