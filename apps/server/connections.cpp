#include "apps/server/connections.hpp"

#include "apps/server/guarded_server.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace vkf::server {

ClientConnection::ClientConnection() : sock_(GuardedServer::current_socket()) {}

bool ClientConnection::gone() const {
    if (sock_ == INVALID_SOCKET) {
        return false;
    }
    char byte = 0;
    const ssize_t n = recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) {
        return false;  // a pipelined request waits: the client is there
    }
    if (n == 0) {
        return true;  // its end: the client closed (or shut down its sending side)
    }
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset
}

}  // namespace vkf::server
