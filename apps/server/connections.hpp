#pragma once
// Whether a request's client is still there. cpp-httplib 0.11.4 (Debian 12's) gives a handler
// no way to learn that the client left: a handler that waits for a whole completion would run
// it to max_tokens for nobody. The guarded transport handles each connection's requests on
// the connection's own thread and knows its socket (GuardedServer::current_socket), and a
// peek at that socket tells.

#include <httplib.h>

namespace vkf::server {

class ClientConnection {
public:
    // The connection of the request the calling thread handles; none outside one, and then
    // gone() is always false.
    ClientConnection();
    // Whether the client closed or reset the connection: a peek at the socket finds its end
    // (or an error). A client that pipelined its next request is still there.
    bool gone() const;
    bool found() const { return sock_ != INVALID_SOCKET; }

private:
    socket_t sock_;
};

}  // namespace vkf::server
