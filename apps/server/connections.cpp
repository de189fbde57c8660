#include "apps/server/connections.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <memory>

namespace vkf::server {
namespace {

struct SocketAddress {
    std::string ip;
    int port = -1;
};

// One end of a TCP socket in the text httplib gives the request (its get_ip_and_port:
// numeric getnameinfo), so that the two compare equal.
bool socket_address(int fd, bool peer, SocketAddress& out) {
    sockaddr_storage addr{};
    socklen_t length = sizeof addr;
    auto* a = reinterpret_cast<sockaddr*>(&addr);
    if ((peer ? getpeername(fd, a, &length) : getsockname(fd, a, &length)) != 0) {
        return false;
    }
    if (addr.ss_family == AF_INET) {
        out.port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
    } else if (addr.ss_family == AF_INET6) {
        out.port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
    } else {
        return false;
    }
    char ip[NI_MAXHOST] = {};
    if (getnameinfo(a, length, ip, sizeof ip, nullptr, 0, NI_NUMERICHOST) != 0) {
        return false;
    }
    out.ip = ip;
    return true;
}

// Calls `f` with every socket descriptor of this process.
void for_each_socket(const std::function<void(int)>& f) {
    const std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/fd"), closedir);
    if (!dir) {
        return;
    }
    const int own = dirfd(dir.get());
    while (const dirent* entry = readdir(dir.get())) {
        int fd = -1;
        const char* end = entry->d_name + std::strlen(entry->d_name);
        if (std::from_chars(entry->d_name, end, fd).ptr != end || fd == own) {
            continue;
        }
        struct stat st {};
        if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
            f(fd);
        }
    }
}

}  // namespace

ClientConnection::ClientConnection(const httplib::Request& req) {
    for_each_socket([&](int fd) {
        SocketAddress local;
        SocketAddress remote;
        if (fd_ < 0 && socket_address(fd, false, local) && local.port == req.local_port && local.ip == req.local_addr &&
            socket_address(fd, true, remote) && remote.port == req.remote_port && remote.ip == req.remote_addr) {
            fd_ = fd;
        }
    });
}

bool ClientConnection::gone() const {
    if (fd_ < 0) {
        return false;
    }
    char byte = 0;
    const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) {
        return false;  // a pipelined request waits: the client is there
    }
    if (n == 0) {
        return true;  // its end: the client closed (or shut down its sending side)
    }
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset
}

void stop_reading_connections(int port) {
    for_each_socket([port](int fd) {
        SocketAddress local;
        SocketAddress remote;
        if (socket_address(fd, false, local) && local.port == port && socket_address(fd, true, remote)) {
            shutdown(fd, SHUT_RD);
        }
    });
}

}  // namespace vkf::server
