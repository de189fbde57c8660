#include "apps/server/guarded_server.hpp"

#include "apps/server/request_body.hpp"

#include <fmt/format.h>

#include <netdb.h>
#include <poll.h>
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
// How often a wait looks whether the server is stopping.
constexpr milliseconds kStopCheck{250};
// After a refusal the connection reads (and drops) what the client still sends, for at most
// this long and this many bytes, before it closes: closing on unread bytes sends a reset,
// which can reach the client before it has read the refusal.
constexpr milliseconds kLinger{1000};
constexpr std::size_t kLingerBytes = 1 << 20;
constexpr std::size_t kReadPiece = 16 * 1024;

enum class Fill { Data, Closed, TimedOut, Stopped };

// One accepted connection: what was read from it and not used yet (a request's head and
// body, for httplib; then any pipelined bytes), and writes under httplib's write timeout.
class Connection final : public httplib::Stream {
public:
    Connection(socket_t sock, const std::atomic<socket_t>& listening, milliseconds write_timeout)
        : sock_(sock), listening_(listening), write_timeout_(write_timeout) {}

    // Appends what arrives before `deadline` to pending().
    Fill fill(Clock::time_point deadline);
    std::string& pending() { return pending_; }
    // The bytes of pending() httplib has read.
    std::size_t taken() const { return taken_; }
    void drop_taken() {
        pending_.erase(0, taken_);
        taken_ = 0;
    }
    bool write_all(std::string_view bytes);
    // Marks the bytes before `end` as read: a body httplib left unread (a request answered
    // before its body was wanted) is not taken for the next request.
    void take_until(std::size_t end) { taken_ = std::max(taken_, std::min(end, pending_.size())); }
    // Stops writing, then drops what the client still sends for a while (see kLinger).
    void linger();

    // httplib reads only what the guard read for it, never the socket.
    bool is_readable() const override { return taken_ < pending_.size(); }
    bool is_writable() const override;
    ssize_t read(char* ptr, size_t size) override;
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override { address(false, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { address(true, ip, port); }
    socket_t socket() const override { return sock_; }

    // Why the request being read is refused, once its body's reading found a reason.
    std::optional<serve::ApiError> refusal;

private:
    void address(bool local, std::string& ip, int& port) const;
    socket_t sock_;
    const std::atomic<socket_t>& listening_;
    milliseconds write_timeout_;
    std::string pending_;
    std::size_t taken_ = 0;
};

int poll_one(socket_t sock, short events, milliseconds timeout) {
    pollfd p{sock, events, 0};
    int r = 0;
    do {
        r = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (r < 0 && errno == EINTR);
    return r;
}

Fill Connection::fill(Clock::time_point deadline) {
    while (true) {
        if (listening_ == INVALID_SOCKET) {
            return Fill::Stopped;
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            return Fill::TimedOut;
        }
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - now) + milliseconds(1);
        const int r = poll_one(sock_, POLLIN, std::min(left, kStopCheck));
        if (r < 0) {
            return Fill::Closed;
        }
        if (r == 0) {
            continue;
        }
        const std::size_t old = pending_.size();
        pending_.resize(old + kReadPiece);
        const ssize_t n = ::recv(sock_, pending_.data() + old, kReadPiece, MSG_DONTWAIT);
        pending_.resize(old + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
        if (n > 0) {
            return Fill::Data;
        }
        if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
            return Fill::Closed;
        }
    }
}

void Connection::linger() {
    ::shutdown(sock_, SHUT_WR);
    const auto until = Clock::now() + kLinger;
    std::size_t drained = 0;
    char sink[kReadPiece];
    while (drained < kLingerBytes) {
        const auto now = Clock::now();
        if (now >= until || poll_one(sock_, POLLIN, std::chrono::duration_cast<milliseconds>(until - now)) <= 0) {
            return;
        }
        const ssize_t n = ::recv(sock_, sink, sizeof(sink), MSG_DONTWAIT);
        if (n <= 0) {
            return;
        }
        drained += static_cast<std::size_t>(n);
    }
}

// As httplib's own socket stream: writable within the write timeout, and the peer has not
// closed (what tells a streamed generation that its client left).
bool Connection::is_writable() const {
    if (poll_one(sock_, POLLOUT, write_timeout_) <= 0) {
        return false;
    }
    if (poll_one(sock_, POLLIN, milliseconds(0)) == 0) {
        return true;
    }
    char byte = 0;
    return ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

ssize_t Connection::read(char* ptr, size_t size) {
    const std::size_t n = std::min(size, pending_.size() - taken_);
    if (n == 0) {
        return -1;  // httplib asked past what the guard read: it never does for a whole request
    }
    std::copy_n(pending_.data() + taken_, n, ptr);
    taken_ += n;
    return static_cast<ssize_t>(n);
}

bool Connection::write_all(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = write(bytes.data(), bytes.size());
        if (n <= 0) {
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

ssize_t Connection::write(const char* ptr, size_t size) {
    if (!is_writable()) {
        return -1;
    }
    ssize_t n = 0;
    do {
        n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
}

void Connection::address(bool local, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t length = sizeof(addr);
    auto* a = reinterpret_cast<sockaddr*>(&addr);
    if ((local ? ::getsockname(sock_, a, &length) : ::getpeername(sock_, a, &length)) != 0) {
        return;
    }
    char host[NI_MAXHOST] = {};
    char service[NI_MAXSERV] = {};
    if (::getnameinfo(a, length, host, sizeof(host), service, sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
        ip = host;
        port = std::atoi(service);
    }
}

// The connection this thread serves, for the Expect hook that turns its refusal into httplib's response.
thread_local Connection* t_connection = nullptr;
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
std::size_t read_body(Connection& conn, httplib::Request& req, const TransportLimits& limits) {
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
    : limits_(limits), metrics_(metrics), handlers_(static_cast<std::ptrdiff_t>(limits.handlers)) {
    using Type = serve::Metrics::Type;
    metrics_.declare("vkf_http_reading_connections", Type::Gauge,
                     "Connections sending a request or idle between two (--max-connections).");
    metrics_.declare("vkf_http_refused_total", Type::Counter,
                     "Requests and connections the transport refused, by reason (the error object's code).");
    new_task_queue = [] { return new ConnectionThreads(); };
    // A refusal found while reading a body goes out through httplib's own error path (its
    // default headers, the routes' error handler): the request is made to ask "Expect:
    // 100-continue", and this hook answers with the refusal instead of 100.
    set_expect_100_continue_handler([](const httplib::Request&, httplib::Response& res) {
        const Connection* conn = t_connection;
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
    metrics_.add("vkf_http_reading_connections", delta);
}

void GuardedServer::refused(const serve::ApiError& error) {
    metrics_.add("vkf_http_refused_total", 1, fmt::format("reason=\"{}\"", error.code().value_or(error.type())));
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
    Connection conn(sock, svr_sock_, write_timeout);
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
