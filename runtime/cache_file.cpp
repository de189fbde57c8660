#include "runtime/cache_file.hpp"

#include <fmt/format.h>

#include "runtime/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

namespace vkf {

namespace {

std::string label(std::string_view what, const std::filesystem::path& path) {
    return fmt::format("{} '{}'", what, path.string());
}

std::string_view file_kind(mode_t mode) {
    if (S_ISDIR(mode)) {
        return "a directory";
    }
    if (S_ISFIFO(mode)) {
        return "a FIFO (named pipe)";
    }
    if (S_ISSOCK(mode)) {
        return "a socket";
    }
    if (S_ISCHR(mode) || S_ISBLK(mode)) {
        return "a device";
    }
    return "not a regular file";
}

// Closes the descriptor it owns.
class Descriptor {
public:
    explicit Descriptor(int fd) : fd_(fd) {}
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    int get() const { return fd_; }
    // Hands the descriptor over, for a close whose result counts.
    int release() { return std::exchange(fd_, -1); }

private:
    int fd_;
};

}  // namespace

std::string read_cache_file(const std::filesystem::path& path, std::uint64_t max_bytes, std::string_view what) {
    // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever.
    const Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (fd.get() < 0) {
        const int error = errno;
        throw Error(fmt::format("{}: cannot open for reading: {}", label(what, path), std::strerror(error)));
    }
    struct stat status {};
    if (::fstat(fd.get(), &status) != 0) {
        const int error = errno;
        throw Error(fmt::format("{}: cannot stat: {}", label(what, path), std::strerror(error)));
    }
    if (!S_ISREG(status.st_mode)) {
        throw Error(fmt::format("{} is {}, not a regular file", label(what, path), file_kind(status.st_mode)));
    }
    const auto size = static_cast<std::uint64_t>(status.st_size);
    if (size > max_bytes) {
        throw Error(fmt::format("{}: {} bytes, over the limit of {} bytes", label(what, path), size, max_bytes));
    }
    std::string bytes(static_cast<std::size_t>(size), '\0');
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::pread(fd.get(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            const int error = errno;
            throw Error(fmt::format("{}: read error at byte {}: {}", label(what, path), done, std::strerror(error)));
        }
        if (n == 0) {
            throw Error(
                fmt::format("{} ends at byte {} although it had {} bytes when opened: it was truncated "
                            "while being read",
                            label(what, path), done, size));
        }
        done += static_cast<std::size_t>(n);
    }
    return bytes;
}

void write_cache_file(const std::filesystem::path& path, std::span<const std::span<const std::byte>> parts,
                      std::string_view what) {
    // Through symbolic links: the rename replaces the file they lead to, and a link stays a link.
    std::error_code unresolved;
    std::filesystem::path target = std::filesystem::weakly_canonical(path, unresolved);
    if (unresolved) {
        target = path;
    }
    // A hidden name in the same directory (rename never crosses file systems), unique per
    // process and attempt.
    std::random_device entropy;
    std::filesystem::path temporary;
    int created = -1;
    for (int attempt = 0; attempt < 16 && created < 0; ++attempt) {
        temporary =
            target.parent_path() / fmt::format(".{}.tmp-{}-{}", target.filename().string(), ::getpid(), entropy());
        created = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (created < 0 && errno != EEXIST) {
            break;
        }
    }
    if (created < 0) {
        const int error = errno;
        throw Error(
            fmt::format("{}: cannot create '{}': {}", label(what, path), temporary.string(), std::strerror(error)));
    }
    Descriptor fd(created);
    // Removes the temporary and throws; nothing is left under either name.
    const auto fail = [&](std::string_view problem, int error) {
        ::close(fd.release());
        ::unlink(temporary.c_str());
        throw Error(fmt::format("{}: {}: {}", label(what, path), problem, std::strerror(error)));
    };
    for (const std::span<const std::byte> part : parts) {
        std::size_t done = 0;
        while (done < part.size()) {
            const ssize_t n = ::write(fd.get(), part.data() + done, part.size() - done);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                fail("write failed", n < 0 ? errno : ENOSPC);
            }
            done += static_cast<std::size_t>(n);
        }
    }
    if (::fsync(fd.get()) != 0 && errno != EINVAL && errno != EROFS) {
        fail("flushing to disk failed", errno);
    }
    // Some file systems report a full disk only at the close.
    if (::close(fd.release()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw Error(fmt::format("{}: closing failed: {}", label(what, path), std::strerror(error)));
    }
    if (::rename(temporary.c_str(), target.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw Error(fmt::format("{}: cannot rename '{}' to it: {}", label(what, path), temporary.string(),
                                std::strerror(error)));
    }
}

}  // namespace vkf
