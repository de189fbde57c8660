#include "apps/server/guarded_server.hpp"

#include "apps/server/connection_stream.hpp"
#include "apps/server/request_body.hpp"

#include <fmt/format.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

namespace vkf::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The longest request line and headers taken: httplib takes lines of up to 8 KB, and 64 KB of
// them is more than any client sends (nginx's default allows 32 KB).
constexpr std::size_t kMaxHead = 64 * 1024;

// The connection this thread serves, for the Expect hook that turns its refusal into httplib's response.
thread_local ConnectionStream* t_connection = nullptr;
// Set while a connection is handed over on the accepting thread (no thread could be started).
thread_local bool t_refuse_at_once = false;

// A thread per connection: a slow client holds its own thread only. How many run is bounded
// by the guard's limits (reading and handling), and a connection past them ends at once.
class ConnectionThreads final : public httplib::TaskQueue {
public:
    void enqueue(std::function<void()> fn) override {
        {
            const std::lock_guard lock(mutex_);
            ++running_;
        }
        try {
            std::thread([this, fn] {
                fn();
                const std::lock_guard lock(mutex_);  // notified under the lock: shutdown() may end the queue then
                --running_;
                done_.notify_all();
            }).detach();
        } catch (const std::system_error&) {
            t_refuse_at_once = true;
            fn();
            t_refuse_at_once = false;
            const std::lock_guard lock(mutex_);
            --running_;
        }
    }
    void shutdown() override {
        std::unique_lock lock(mutex_);
        done_.wait(lock, [this] { return running_ == 0; });
    }

private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::size_t running_ = 0;
};

// A place among the connections that read a request (or wait for the next one).
class ReadingSlot {
public:
    ReadingSlot(std::atomic<std::uint32_t>& count, std::uint32_t max, std::function<void(int)> changed)
        : count_(count), max_(max), changed_(std::move(changed)) {}
    ReadingSlot(const ReadingSlot&) = delete;
    ReadingSlot& operator=(const ReadingSlot&) = delete;
    ~ReadingSlot() { leave(); }
    bool enter() {
        if (!held_) {
            if (count_.fetch_add(1) >= max_) {
                count_.fetch_sub(1);
                return false;
            }
            held_ = true;
            changed_(1);
        }
        return true;
    }
    void leave() {
        if (held_) {
            held_ = false;
            count_.fetch_sub(1);
            changed_(-1);
        }
    }

private:
    std::atomic<std::uint32_t>& count_;
    std::uint32_t max_;
    std::function<void(int)> changed_;
    bool held_ = false;
};

struct HandlerPermit {
    explicit HandlerPermit(std::counting_semaphore<>& s) : semaphore(s) { semaphore.acquire(); }
    HandlerPermit(const HandlerPermit&) = delete;
    HandlerPermit& operator=(const HandlerPermit&) = delete;
    ~HandlerPermit() { semaphore.release(); }
    std::counting_semaphore<>& semaphore;
};

std::string_view reason_phrase(int status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 408:
            return "Request Timeout";
        case 413:
            return "Payload Too Large";
        case 415:
            return "Unsupported Media Type";
        case 431:
            return "Request Header Fields Too Large";
        case 503:
            return "Service Unavailable";
        default:
            return "Error";
    }
}

// A refusal written before httplib has a request to answer (no head yet, or no room).
std::string refusal_response(const serve::ApiError& e) {
    const std::string body = e.body().dump();
    return fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
        e.status(), reason_phrase(e.status()), body.size(), e.status() == 503 ? "Retry-After: 1\r\n" : "", body);
}

serve::ApiError too_many_connections(std::uint32_t max) {
    return {
        503, "server_error",
        fmt::format("the server is busy: {} connections are sending requests (--max-connections); retry later", max),
        std::nullopt, "too_many_connections"};
}

serve::ApiError timed_out(const char* what, milliseconds limit, const char* option, const char* code) {
    return {408, "invalid_request_error",
            fmt::format("the request's {} did not arrive within {:g} s ({})", what,
                        static_cast<double>(limit.count()) / 1000.0, option),
            std::nullopt, code};
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

std::uint64_t content_length(const std::string& text, std::uint64_t max_body) {
    if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) {
        throw serve::invalid_request(fmt::format("Content-Length '{}' is not a number of bytes", text), std::nullopt,
                                     "invalid_body");
    }
    const std::uint64_t length = std::stoull(text);
    if (length > max_body) {
        throw serve::body_too_large(max_body);
    }
    return length;
}

// Reads the body of the request whose head httplib has just parsed, under `limits`, and leaves
// it decoded in the connection's pending bytes with the headers of a plain Content-Length body:
// httplib's own chunked reader and decompressors then have nothing to do. Returns where the
// body ends in the pending bytes.
std::size_t read_body(ConnectionStream& conn, httplib::Request& req, const TransportLimits& limits) {
    const auto deadline = Clock::now() + limits.body_timeout;
    const std::string transfer = req.get_header_value("Transfer-Encoding");
    const ContentCoding coding = parse_content_coding(req.get_header_value("Content-Encoding"));
    const bool chunked = !transfer.empty();
    if (req.get_header_value_count("Content-Length") > 1 || req.get_header_value_count("Transfer-Encoding") > 1) {
        throw serve::invalid_request("the request has more than one Content-Length or Transfer-Encoding header",
                                     std::nullopt, "invalid_body");
    }
    std::uint64_t length = 0;
    if (chunked && lower(transfer) != "chunked") {
        throw serve::invalid_request(
            fmt::format("Transfer-Encoding '{}' is not accepted: send chunked, or a Content-Length", transfer),
            std::nullopt, "invalid_body");
    }
    if (chunked && req.has_header("Content-Length")) {
        // Two lengths that may disagree: what request smuggling through a proxy is made of.
        throw serve::invalid_request("the request has both Transfer-Encoding and Content-Length", std::nullopt,
                                     "invalid_body");
    }
    if (!chunked && req.has_header("Content-Length")) {
        length = content_length(req.get_header_value("Content-Length"), limits.max_body);
    }
    if (lower(req.get_header_value("Expect")) == "100-continue") {
        conn.write_all("HTTP/1.1 100 Continue\r\n\r\n");
        req.headers.erase("Expect");
    }
    const auto more = [&] {
        switch (conn.fill(deadline)) {
            case Fill::Data:
                return;
            case Fill::TimedOut:
                throw timed_out("body", limits.body_timeout, "--body-timeout", "body_timeout");
            default:
                throw serve::invalid_request("the connection ended inside the request body", std::nullopt,
                                             "incomplete_body");
        }
    };
    std::string& pending = conn.pending();
    const std::size_t start = conn.taken();
    if (chunked) {
        ChunkedDecoder decoder(limits.max_body);
        std::string body;
        while (true) {
            // The chunk framing read is dropped as it is decoded: only the data stays.
            pending.erase(start, decoder.feed(std::string_view(pending).substr(start), body));
            if (decoder.done()) {
                break;
            }
            more();
        }
        pending.insert(start, body);
        length = body.size();
    } else {
        while (pending.size() - start < length) {
            more();
        }
    }
    if (coding == ContentCoding::Zlib) {
        const std::string inflated =
            inflate_body(std::string_view(pending).substr(start, static_cast<std::size_t>(length)), limits.max_body);
        pending.replace(start, static_cast<std::size_t>(length), inflated);
        length = inflated.size();
    }
    req.headers.erase("Transfer-Encoding");
    req.headers.erase("Content-Encoding");
    req.headers.erase("Content-Length");
    req.headers.emplace("Content-Length", fmt::format("{}", length));
    return start + static_cast<std::size_t>(length);
}

}  // namespace

GuardedServer::GuardedServer(const TransportLimits& limits, serve::Metrics& metrics)
    : limits_(limits),
      reading_connections_(metrics.declare_gauge(
          "vkf_http_reading_connections", "Connections sending a request or idle between two (--max-connections).")),
      refused_(metrics.declare_counter(
          "vkf_http_refused_total",
          "Requests and connections the transport refused, by reason (the error object's code).")),
      handlers_(static_cast<std::ptrdiff_t>(limits.handlers)) {
    new_task_queue = [] { return new ConnectionThreads(); };
    // A refusal found while reading a body goes out through httplib's own error path (its
    // default headers, the routes' error handler): the request is made to ask "Expect:
    // 100-continue", and this hook answers with the refusal instead of 100.
    set_expect_100_continue_handler([](const httplib::Request&, httplib::Response& res) {
        const ConnectionStream* conn = t_connection;
        if (conn == nullptr || !conn->refusal) {
            return 100;
        }
        res.status = conn->refusal->status();
        res.set_content(conn->refusal->body().dump(), "application/json");
        // httplib's write_response sets no length on this path; the body then ends at the close.
        res.set_header("Content-Length", fmt::format("{}", res.body.size()));
        return res.status;
    });
}

bool GuardedServer::listen_after_bind() {
    // Linux takes a second listen() on a listening socket as a new backlog.
    if (svr_sock_ != INVALID_SOCKET) {
        ::listen(svr_sock_, SOMAXCONN);
    }
    return httplib::Server::listen_after_bind();
}

void GuardedServer::reading_changed(int delta) {
    reading_connections_.add(delta);
}

void GuardedServer::refused(const serve::ApiError& error) {
    refused_.add(1, fmt::format("reason=\"{}\"", error.code().value_or(error.type())));
}

socket_t GuardedServer::current_socket() {
    return t_connection != nullptr ? t_connection->socket() : INVALID_SOCKET;
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
    try {
        serve_connection(sock);
    } catch (const std::exception&) {
        // Out of memory, or a failure inside httplib: this connection ends, the server goes on.
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return true;
}

void GuardedServer::serve_connection(socket_t sock) {
    const milliseconds write_timeout(write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000);
    ConnectionStream conn(sock, svr_sock_, write_timeout);
    ReadingSlot slot(reading_, limits_.max_connections, [this](int delta) { reading_changed(delta); });
    if (t_refuse_at_once || !slot.enter()) {
        const serve::ApiError busy = too_many_connections(limits_.max_connections);
        refused(busy);
        conn.write_all(refusal_response(busy));
        return;
    }
    auto start = Clock::now();
    for (std::size_t served = 0; served < keep_alive_max_count_; ++served) {
        if (served > 0) {
            // Kept alive: a place among the reading connections again (or the end, when
            // there is none), and the next request's first byte within the keep-alive timeout.
            conn.drop_taken();
            if (!slot.enter() ||
                (conn.pending().empty() &&
                 conn.fill(Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_)) != Fill::Data)) {
                return;
            }
            start = Clock::now();
        }
        std::size_t searched = 0;
        while (conn.pending().find("\r\n\r\n", searched) == std::string::npos) {
            searched = conn.pending().size() < 3 ? 0 : conn.pending().size() - 3;
            if (conn.pending().size() > kMaxHead) {
                const serve::ApiError e(431, "invalid_request_error",
                                        fmt::format("the request's line and headers are over {} bytes", kMaxHead),
                                        std::nullopt, "headers_too_large");
                refused(e);
                conn.write_all(refusal_response(e));
                conn.linger();
                return;
            }
            const Fill got = conn.fill(start + limits_.header_timeout);
            if (got == Fill::TimedOut) {
                const serve::ApiError e =
                    timed_out("headers", limits_.header_timeout, "--header-timeout", "header_timeout");
                refused(e);
                conn.write_all(refusal_response(e));
                conn.linger();
                return;
            }
            if (got != Fill::Data) {
                return;
            }
        }
        std::optional<std::size_t> body_end;
        bool connection_closed = false;
        std::optional<HandlerPermit> permit;
        t_connection = &conn;
        const bool ok =
            process_request(conn, served + 1 == keep_alive_max_count_, connection_closed, [&](httplib::Request& req) {
                try {
                    body_end = read_body(conn, req, limits_);
                } catch (const serve::ApiError& e) {
                    conn.refusal = e;
                    req.headers.erase("Expect");
                    req.headers.emplace("Expect", "100-continue");
                    req.headers.erase("Connection");
                    req.headers.emplace("Connection", "close");
                    return;
                }
                permit.emplace(handlers_);
                slot.leave();
            });
        t_connection = nullptr;
        permit.reset();
        if (conn.refusal) {
            refused(*conn.refusal);
            conn.linger();
            return;
        }
        // No body_end: httplib answered a head it could not parse (400, 414) and the
        // connection's bytes no longer line up with requests.
        if (!ok || connection_closed || !body_end || svr_sock_ == INVALID_SOCKET) {
            return;
        }
        conn.take_until(*body_end);
    }
}

}  // namespace vkf::server
