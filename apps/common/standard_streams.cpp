#include "apps/common/standard_streams.hpp"

#include "base/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace vkf::app {

namespace {

std::string_view stream_name(std::FILE* out) {
    return out == stderr ? "standard error" : out == stdout ? "standard output" : "output";
}

}  // namespace

void ensure_standard_descriptors() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
            continue;
        }
        // open() returns the lowest free descriptor: this one, as the lower ones are open.
        const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (opened != fd) {
            // No /dev/null (a bare chroot): refuse rather than let a data file take its place.
            std::_Exit(1);
        }
    }
}

void flush_checked(std::FILE* out) {
    errno = 0;
    const bool failed = std::fflush(out) != 0 || std::ferror(out) != 0;
    if (failed) {
        const int error = errno;
        std::clearerr(out);
        throw Error(std::string(stream_name(out)) +
                    ": write failed: " + (error != 0 ? std::strerror(error) : "an earlier write was lost"));
    }
}

void write_checked(std::string_view text, std::FILE* out) {
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), out) != text.size()) {
        const int error = errno;
        std::clearerr(out);
        throw Error(std::string(stream_name(out)) + ": write failed: " + std::strerror(error));
    }
    flush_checked(out);
}

std::string_view close_stdout() {
    errno = 0;
    const bool flush_failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
    int error = errno;
    const bool close_failed = std::fclose(stdout) != 0;
    if (!flush_failed && close_failed) {
        error = errno;
    }
    if (!flush_failed && !close_failed) {
        return {};
    }
    static std::string message;
    message = std::string("standard output: write failed: ") +
              (error != 0 ? std::strerror(error) : "an earlier write was lost");
    return message;
}

}  // namespace vkf::app
