#include "apps/server/connection_stream.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace vkf::server {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a wait looks whether the server is stopping.
constexpr milliseconds kStopCheck{250};
// After a refusal the connection reads (and drops) what the client still sends, for at most
// this long and this many bytes, before it closes: closing on unread bytes sends a reset,
// which can reach the client before it has read the refusal.
constexpr milliseconds kLinger{1000};
constexpr std::size_t kLingerBytes = 1 << 20;
constexpr std::size_t kReadPiece = 16 * 1024;

int poll_one(socket_t sock, short events, milliseconds timeout) {
    pollfd p{sock, events, 0};
    int r = 0;
    do {
        r = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (r < 0 && errno == EINTR);
    return r;
}

}  // namespace

Fill ConnectionStream::fill(Clock::time_point deadline) {
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

void ConnectionStream::linger() {
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
bool ConnectionStream::is_writable() const {
    if (poll_one(sock_, POLLOUT, write_timeout_) <= 0) {
        return false;
    }
    if (poll_one(sock_, POLLIN, milliseconds(0)) == 0) {
        return true;
    }
    char byte = 0;
    return ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
    const std::size_t n = std::min(size, pending_.size() - taken_);
    if (n == 0) {
        return -1;  // httplib asked past what the guard read: it never does for a whole request
    }
    std::copy_n(pending_.data() + taken_, n, ptr);
    taken_ += n;
    return static_cast<ssize_t>(n);
}

bool ConnectionStream::write_all(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = write(bytes.data(), bytes.size());
        if (n <= 0) {
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
    if (!is_writable()) {
        return -1;
    }
    ssize_t n = 0;
    do {
        n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
}

void ConnectionStream::address(bool local, std::string& ip, int& port) const {
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

}  // namespace vkf::server
