#pragma once
// A connection of vkf-server's guarded transport (apps/server/guarded_server.hpp): the socket
// read into a buffer under deadlines, which httplib then parses from; it never reads the
// socket itself.

#include "host/serve/api_error.hpp"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace vkf::server {

// What a wait for more bytes ended with (Stopped: the server is stopping).
enum class Fill { Data, Closed, TimedOut, Stopped };

// One accepted connection as httplib's Stream: what was read from it and not used yet (a
// request's head and body, for httplib; then any pipelined bytes, kept for the next turn),
// reads under a deadline that the server can cut short by stopping, and writes under
// httplib's write timeout.
class ConnectionStream final : public httplib::Stream {
public:
    ConnectionStream(socket_t sock, const std::atomic<socket_t>& listening, std::chrono::milliseconds write_timeout)
        : sock_(sock), listening_(listening), write_timeout_(write_timeout) {}

    // Appends what arrives before `deadline` to pending().
    Fill fill(std::chrono::steady_clock::time_point deadline);
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
    // Stops writing, then drops what the client still sends for at most 1 s or 1 MB, so that
    // the client reads a refusal before the close rather than a reset.
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
    std::chrono::milliseconds write_timeout_;
    std::string pending_;
    std::size_t taken_ = 0;
};

}  // namespace vkf::server
