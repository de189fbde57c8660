#pragma once
// What the libFuzzer targets share (tests/fuzz/*.cpp, docs/DESIGN.md "Fuzzing").
//
// A target feeds its input to one parser of users' files. A vkf::Error is the expected way
// to refuse bad input; anything else is a finding: a crash, an ASan or UBSan report, an
// exception of another type (reported by run_parser, which aborts so libFuzzer saves the
// input), a broken property (check), a timeout or running out of memory.

#include "base/error.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace vkf::fuzz {

// A broken property of a parser's result: print it and abort (libFuzzer saves the input).
inline void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz: property violated: %s\n", what);
        std::abort();
    }
}

// Keeps a value the compiler would otherwise drop (a sum over bytes read to touch them).
inline void sink(std::uint64_t value) {
    static volatile std::uint64_t kept = 0;
    kept = kept + value;
}

// Runs `parse`; a vkf::Error is an accepted refusal, any other exception a finding.
template <class F>
void run_parser(F&& parse) {
    try {
        parse();
    } catch (const vkf::Error&) {
        // the input was refused with a message: the expected outcome for bad input
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz: an exception other than vkf::Error escaped: %s: %s\n", typeid(e).name(), e.what());
        std::abort();
    } catch (...) {
        std::fprintf(stderr, "fuzz: an exception of unknown type escaped\n");
        std::abort();
    }
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// `text` cut at every `delimiter` (at most max_parts parts; the last takes the rest).
inline std::vector<std::string_view> split(std::string_view text, std::string_view delimiter, std::size_t max_parts) {
    std::vector<std::string_view> parts;
    while (parts.size() + 1 < max_parts) {
        const std::size_t at = text.find(delimiter);
        if (at == std::string_view::npos) {
            break;
        }
        parts.push_back(text.substr(0, at));
        text.remove_prefix(at + delimiter.size());
    }
    parts.push_back(text);
    return parts;
}

// Writes a whole file (creating or truncating it); aborts when the harness cannot write.
inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    check(fd >= 0, "the harness cannot create its scratch file");
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        check(n > 0, "the harness cannot write its scratch file");
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
}

// A directory of this process's own, removed at exit: under $VKF_FUZZ_SCRATCH (scripts/fuzz.sh
// sets it), else in memory in /dev/shm, else under $TMPDIR or /tmp. Each libFuzzer worker
// (-jobs, -fork) is a process and gets its own.
inline const std::filesystem::path& scratch_dir() {
    static const std::filesystem::path dir = [] {
        const auto usable = [](const char* d) { return d != nullptr && *d != '\0' && ::access(d, W_OK) == 0; };
        std::string base = "/tmp";
        if (usable(std::getenv("VKF_FUZZ_SCRATCH"))) {
            base = std::getenv("VKF_FUZZ_SCRATCH");
        } else if (usable("/dev/shm")) {
            base = "/dev/shm";
        } else if (usable(std::getenv("TMPDIR"))) {
            base = std::getenv("TMPDIR");
        }
        std::string pattern = base + "/vkf-fuzz-XXXXXX";
        check(::mkdtemp(pattern.data()) != nullptr, "the harness cannot create its scratch directory");
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(scratch_dir(), ignored);
        });
        return std::filesystem::path(pattern);
    }();
    return dir;
}

// An anonymous in-memory file (memfd) with a path, /proc/self/fd/N, that opens and maps
// like a regular file: a parser that takes a path reads the input from it without a disk.
class MemFile {
public:
    MemFile() : fd_(::memfd_create("vkf-fuzz-input", MFD_CLOEXEC)) {
        check(fd_ >= 0, "memfd_create failed");
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    MemFile(const MemFile&) = delete;
    MemFile& operator=(const MemFile&) = delete;
    ~MemFile() { ::close(fd_); }

    // Replaces the contents; nothing may map the file meanwhile.
    void set(std::string_view bytes) {
        check(::ftruncate(fd_, 0) == 0, "ftruncate failed");
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
            check(n > 0, "pwrite to the memfd failed");
            done += static_cast<std::size_t>(n);
        }
    }
    const std::filesystem::path& path() const { return path_; }

private:
    int fd_;
    std::filesystem::path path_;
};

}  // namespace vkf::fuzz
