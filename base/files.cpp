#include "base/files.hpp"

#include "base/error.hpp"
#include "base/format.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <random>
#include <utility>

#include <fmt/format.h>

namespace vkf {

namespace {

std::string errno_text(int error) {
    return std::strerror(error);
}

std::string quoted(std::string_view what, const std::filesystem::path& path) {
    return std::string(what) + " '" + path.string() + "'";
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

}  // namespace

ReadableFile::ReadableFile(const std::filesystem::path& path, std::string_view what) : path_(path), what_(what) {
    // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd_ < 0) {
        const int error = errno;
        throw Error(label() + ": cannot open for reading: " + errno_text(error));
    }
    struct stat status {};
    if (::fstat(fd_, &status) != 0) {
        const int error = errno;
        ::close(fd_);
        throw Error(label() + ": cannot stat: " + errno_text(error));
    }
    if (!S_ISREG(status.st_mode)) {
        ::close(fd_);
        throw Error(label() + " is " + std::string(file_kind(status.st_mode)) + ", not a regular file");
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    size_ = static_cast<std::uint64_t>(status.st_size);
}

ReadableFile::ReadableFile(int fd, std::uint64_t offset, std::uint64_t length, std::string_view what)
    : path_(fmt::format("fd {} bytes [{}, {})", fd, offset, offset + length)), what_(what) {
    if (offset > std::numeric_limits<std::uint64_t>::max() - length ||
        offset + length > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) {
        throw Error(fmt::format("{}: offset {} and length {} overflow", label(), offset, length));
    }
    fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (fd_ < 0) {
        const int error = errno;
        throw Error(fmt::format("{}: not an open file descriptor: {}", label(), errno_text(error)));
    }
    struct stat status {};
    std::string problem;
    if (::fstat(fd_, &status) != 0) {
        problem = fmt::format("{}: cannot stat: {}", label(), errno_text(errno));
    } else if (!S_ISREG(status.st_mode)) {
        problem = fmt::format("{} is {}, not a regular file", label(), file_kind(status.st_mode));
    } else if (offset + length > static_cast<std::uint64_t>(status.st_size)) {
        problem = fmt::format("{}: the file has only {} bytes", label(), status.st_size);
    }
    if (!problem.empty()) {
        ::close(fd_);
        fd_ = -1;
        throw Error(problem);
    }
    base_ = offset;
    size_ = length;
}

ReadableFile::ReadableFile(ReadableFile&& other) noexcept
    : path_(std::move(other.path_)),
      what_(std::move(other.what_)),
      fd_(std::exchange(other.fd_, -1)),
      base_(other.base_),
      size_(other.size_) {}

ReadableFile& ReadableFile::operator=(ReadableFile&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        path_ = std::move(other.path_);
        what_ = std::move(other.what_);
        fd_ = std::exchange(other.fd_, -1);
        base_ = other.base_;
        size_ = other.size_;
    }
    return *this;
}

ReadableFile::~ReadableFile() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

std::string ReadableFile::label() const {
    return quoted(what_, path_);
}

void ReadableFile::read_at(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset > size_ || out.size() > size_ - offset) {
        throw Error(label() + ": bytes " + fmt::to_string(offset) + " to " + fmt::to_string(offset + out.size()) +
                    " lie beyond its " + fmt::to_string(size_) + " bytes");
    }
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(base_ + offset + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            const int error = errno;
            throw Error(label() + ": read error at byte " + fmt::to_string(offset + done) + ": " + errno_text(error));
        }
        if (n == 0) {
            throw Error(label() + " ends at byte " + fmt::to_string(offset + done) + " although it had " +
                        fmt::to_string(size_) + " bytes when opened: it was truncated while being read");
        }
        done += static_cast<std::size_t>(n);
    }
}

std::string read_file(const std::filesystem::path& path, std::uint64_t max_bytes, std::string_view what) {
    const ReadableFile file(path, what);
    if (file.size() > max_bytes) {
        throw Error(file.label() + ": " + size_text(file.size()) + " is too large for " + std::string(what) +
                    " (the limit is " + size_text(max_bytes) + ")");
    }
    std::string bytes(static_cast<std::size_t>(file.size()), '\0');
    file.read_at(0, std::as_writable_bytes(std::span<char>(bytes)));
    return bytes;
}

namespace {

// Where a symbolic link finally leads (the path itself when it is no link), resolved one link
// at a time so that a dangling link names the file it would create.
std::filesystem::path final_target(std::filesystem::path path) {
    for (int depth = 0; depth < 40; ++depth) {
        std::error_code error;
        if (!std::filesystem::is_symlink(std::filesystem::symlink_status(path, error))) {
            return path;
        }
        const std::filesystem::path link = std::filesystem::read_symlink(path, error);
        if (error) {
            return path;
        }
        path = link.is_absolute() ? link : path.parent_path() / link;
    }
    return path;  // a loop: open() reports ELOOP
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target, std::string_view what) : target_(std::move(target)), what_(what) {
    struct stat status {};
    if (::stat(target_.c_str(), &status) == 0 && !S_ISREG(status.st_mode) && !S_ISDIR(status.st_mode)) {
        // A device, FIFO or socket: a temporary renamed over it would replace the node itself.
        fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd_ < 0) {
            const int error = errno;
            throw Error(quoted(what_, target_) + ": cannot open for writing: " + errno_text(error));
        }
        return;
    }
    // Through symbolic links: the rename replaces the file they lead to, not the link.
    const std::filesystem::path file = final_target(target_);
    // A hidden name in the same directory (rename never crosses file systems), unique per
    // process and attempt.
    std::random_device entropy;
    for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
        temporary_ = file.parent_path() / ("." + file.filename().string() + ".tmp-" + fmt::to_string(::getpid()) + "-" +
                                           fmt::to_string(entropy()));
        fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ < 0 && errno != EEXIST) {
            break;
        }
    }
    if (fd_ < 0) {
        const int error = errno;
        throw Error(quoted(what_, target_) + ": cannot create '" + temporary_.string() + "': " + errno_text(error));
    }
    renamed_to_ = file;
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) {
        ::close(fd_);
        unlink_temporary();
    }
}

void AtomicFile::unlink_temporary() const {
    if (!temporary_.empty()) {
        ::unlink(temporary_.c_str());
    }
}

void AtomicFile::fail(const std::string& problem, int error) {
    ::close(fd_);
    fd_ = -1;
    unlink_temporary();
    std::string reason = errno_text(error);
    if (!temporary_.empty() && (error == ENOSPC || error == EDQUOT || error == EFBIG)) {
        reason += " (nothing was written under that name)";
    }
    throw Error(quoted(what_, target_) + ": " + problem + ": " + reason);
}

void AtomicFile::write(std::span<const std::byte> bytes) {
    if (fd_ < 0) {
        throw Error(quoted(what_, target_) + ": written after it was committed or failed");
    }
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fail("write failed", n < 0 ? errno : ENOSPC);
        }
        done += static_cast<std::size_t>(n);
    }
}

void AtomicFile::write(std::string_view text) {
    write(std::as_bytes(std::span<const char>(text)));
}

void AtomicFile::commit() {
    if (fd_ < 0) {
        throw Error(quoted(what_, target_) + ": committed twice or after a failure");
    }
    if (temporary_.empty()) {  // written in place: a stream has nothing to sync or rename
        const int fd = std::exchange(fd_, -1);
        if (::close(fd) != 0 && errno != EINTR) {
            const int error = errno;
            throw Error(quoted(what_, target_) + ": closing failed: " + errno_text(error));
        }
        return;
    }
    if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
        fail("flushing to disk failed", errno);
    }
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
        const int error = errno;
        unlink_temporary();
        throw Error(quoted(what_, target_) + ": closing failed: " + errno_text(error));
    }
    if (::rename(temporary_.c_str(), renamed_to_.c_str()) != 0) {
        const int error = errno;
        unlink_temporary();
        throw Error(quoted(what_, target_) + ": cannot rename '" + temporary_.string() +
                    "' to it: " + errno_text(error));
    }
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes, std::string_view what) {
    AtomicFile file(path, what);
    file.write(bytes);
    file.commit();
}

void check_free_space(const std::filesystem::path& dir, std::uint64_t bytes, std::string_view what) {
    std::filesystem::path existing = dir.empty() ? std::filesystem::path(".") : dir;
    std::error_code ignored;
    while (!std::filesystem::exists(existing, ignored) && existing.has_parent_path() &&
           existing.parent_path() != existing) {
        existing = existing.parent_path();
    }
    struct statvfs fs {};
    if (::statvfs(existing.c_str(), &fs) != 0) {
        return;
    }
    const std::uint64_t block = fs.f_frsize != 0 ? fs.f_frsize : fs.f_bsize;
    const std::uint64_t free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * block;
    if (bytes > free_bytes) {
        throw Error(std::string(what) + ": needs " + size_text(bytes) + " but the file system of '" +
                    existing.string() + "' has " + size_text(free_bytes) + " free");
    }
}

}  // namespace vkf
