#pragma once
// Reading and writing the files users hand us, in the ways that cannot hang, fault or lose
// data silently.
//
// Reading: a path may name a FIFO, a device or a directory. Opening a FIFO for reading
// blocks until a writer appears, so files are opened non-blocking and refused unless they
// are regular files; then they are read with read()/pread(), never memory-mapped: a mapped
// file truncated by another process kills the reader with SIGBUS, where pread() reports a
// short read that becomes an error naming the file.
//
// Writing: every file is written under a temporary name beside its final one and renamed
// over it only when every byte reached the file system (each write() and the close()
// checked), so a full disk or a crash never leaves a truncated file under the final name.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace vkf {

// An open regular file, read by offset. Move-only; closes the descriptor.
class ReadableFile {
public:
    // Throws vkf::Error "<what> '<path>': ..." when the path cannot be opened or is not a
    // regular file (it never blocks on a FIFO). `what` names the file's role ("config.json",
    // "safetensors file").
    ReadableFile(const std::filesystem::path& path, std::string_view what);
    // Bytes [offset, offset + length) of the regular file open as `fd` (an Android asset inside
    // an APK: AssetFileDescriptor's descriptor, start offset and length), read as a file of its
    // own; the descriptor is duplicated, so the caller keeps and closes its own. Its path is
    // "fd N bytes [offset, offset + length)". Throws vkf::Error naming `what` for a descriptor
    // that is not open, not a regular file, or shorter than offset + length.
    ReadableFile(int fd, std::uint64_t offset, std::uint64_t length, std::string_view what);
    ReadableFile(ReadableFile&& other) noexcept;
    ReadableFile& operator=(ReadableFile&& other) noexcept;
    ReadableFile(const ReadableFile&) = delete;
    ReadableFile& operator=(const ReadableFile&) = delete;
    ~ReadableFile();

    const std::filesystem::path& path() const { return path_; }
    // The size when opened.
    std::uint64_t size() const { return size_; }
    // "<what> '<path>'", for messages.
    std::string label() const;

    // Fills `out` with the bytes at `offset`. Throws vkf::Error naming the file when they
    // lie beyond the size it had when opened or the file ends early (it was truncated
    // meanwhile).
    void read_at(std::uint64_t offset, std::span<std::byte> out) const;

private:
    std::filesystem::path path_;
    std::string what_;
    int fd_ = -1;
    std::uint64_t base_ = 0;  // where the file starts within fd_
    std::uint64_t size_ = 0;
};

// The whole file, after checking that it is a regular file of at most max_bytes (before
// anything is read). Throws vkf::Error naming the file and the limit otherwise.
std::string read_file(const std::filesystem::path& path, std::uint64_t max_bytes, std::string_view what);

// A file being written under a temporary name in the target's directory; commit() makes it
// the target. Destroyed without commit() (an error was thrown), the temporary is removed and
// an existing target is left as it was. What the target already is decides how:
// - a regular file, or nothing: a temporary beside it, renamed over it by commit();
// - a symbolic link: followed; its final target is written so (temporary beside that file,
//   renamed over it), and the link stays a link;
// - anything else that exists and is not a directory (a device such as /dev/null or
//   /dev/full, a FIFO, a socket, /dev/stdout, /dev/fd/N of a pipe from `>(...)`): written in
//   place as a stream, never replaced by a regular file; write errors are reported the same.
class AtomicFile {
public:
    // Throws vkf::Error naming the file when the temporary cannot be created.
    AtomicFile(std::filesystem::path target, std::string_view what);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();

    const std::filesystem::path& target() const { return target_; }
    // Each throws vkf::Error naming the target and the system's reason ("No space left on
    // device") as soon as a write fails.
    void write(std::span<const std::byte> bytes);
    void write(std::string_view text);
    // Flushes to the file system, closes (checked: some file systems report a full disk only
    // there) and renames over the target.
    void commit();

private:
    [[noreturn]] void fail(const std::string& problem, int error);
    void unlink_temporary() const;

    std::filesystem::path target_;
    std::filesystem::path temporary_;   // empty when written in place
    std::filesystem::path renamed_to_;  // the target, through its symbolic links
    std::string what_;
    int fd_ = -1;
};

// Writes `bytes` as the whole file, atomically as AtomicFile does.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes, std::string_view what);

// Throws vkf::Error "<what>: needs N bytes but the file system of '<dir>' has M free" when the
// file system holding `dir` (or its nearest existing ancestor) has fewer than `bytes` free
// for unprivileged users. Nothing is thrown when the free space cannot be determined.
void check_free_space(const std::filesystem::path& dir, std::uint64_t bytes, std::string_view what);

}  // namespace vkf
