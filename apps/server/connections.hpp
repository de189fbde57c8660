#pragma once
// The sockets of vkf-server's HTTP connections. cpp-httplib 0.11.4 (Debian 12's) gives a
// handler no handle on its connection and no way to learn that the client left: a handler
// that waits for a whole completion would run it to max_tokens for nobody. A TCP connection
// is named by its two addresses, which the request carries (local_addr/port,
// remote_addr/port): the one descriptor of this process whose socket has those addresses is
// the request's, and it stays open while the handler runs. Linux only (/proc/self/fd).

#include <httplib.h>

#include <string>

namespace vkf::server {

class ClientConnection {
public:
    // The socket of the connection `req` came on (found by its addresses); none if it cannot
    // be found, and then gone() is always false.
    explicit ClientConnection(const httplib::Request& req);
    // Whether the client closed or reset the connection: a peek at the socket finds its end
    // (or an error). A client that pipelined its next request is still there.
    bool gone() const;
    bool found() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

// Shuts reading down on every accepted connection to `port` (the listening socket closed
// already): a worker thread waiting for a keep-alive connection's next request sees its end
// at once instead of after the keep-alive timeout, so a stopping server is not held up by idle
// clients. Answers being written are not touched.
void stop_reading_connections(int port);

}  // namespace vkf::server
