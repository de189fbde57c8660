// Output paths that are not regular files (issue 32): a device, a FIFO, a symbolic link,
// /dev/fd/N of a pipe. AtomicFile (base/files.hpp), behind every --out, --logits-out
// and --plot, used to rename a temporary over them all: /dev/null became a .npy file as root,
// a FIFO's reader waited forever, a symlink was replaced by a file.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>

#include "base/error.hpp"
#include "base/files.hpp"
#include "host/io/npy.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::test::error_message;

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST(OutputPaths, RegularFileIsReplacedAtomically) {
    const vkf::test::TempDir dir("vkf-output-paths");
    vkf::write_file_atomically(dir.path() / "out.txt", "old", "test file");
    vkf::write_file_atomically(dir.path() / "out.txt", "new", "test file");
    EXPECT_EQ(slurp(dir.path() / "out.txt"), "new");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(OutputPaths, SymlinkIsFollowedAndStaysALink) {
    const vkf::test::TempDir dir("vkf-output-paths");
    fs::create_directory(dir.path() / "real");
    vkf::write_file_atomically(dir.path() / "real" / "target.npy", "old", "test file");
    fs::create_symlink("real/target.npy", dir.path() / "link.npy");
    const std::size_t shape[] = {2};
    const float values[] = {1.0f, 2.0f};
    vkf::write_npy_f32(dir.path() / "link.npy", shape, values);
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir.path() / "link.npy")));
    EXPECT_EQ(vkf::npy_as_float32(vkf::read_npy(dir.path() / "real" / "target.npy")).size(), 2u);
    // The temporary was beside the target, and is gone.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path() / "real"), fs::directory_iterator()), 1);
    // A dangling link creates the file it names.
    fs::create_symlink("real/new.txt", dir.path() / "dangling");
    vkf::write_file_atomically(dir.path() / "dangling", "made", "test file");
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir.path() / "dangling")));
    EXPECT_EQ(slurp(dir.path() / "real" / "new.txt"), "made");
}

TEST(OutputPaths, FifoIsWrittenInPlace) {
    const vkf::test::TempDir dir("vkf-output-paths");
    const fs::path fifo = dir.path() / "pipe";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto reader = std::async(std::launch::async, [&] { return slurp(fifo); });
    vkf::write_file_atomically(fifo, std::string(100000, 'x'), "test file");
    ASSERT_EQ(reader.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    EXPECT_EQ(reader.get().size(), 100000u);
    EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(OutputPaths, PipeThroughDevFdIsWrittenInPlace) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const fs::path path = "/dev/fd/" + std::to_string(fds[1]);
    vkf::write_file_atomically(path, "through the pipe", "test file");
    ::close(fds[1]);
    char buffer[64] = {};
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    ::close(fds[0]);
    EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<std::size_t>(n) : 0), "through the pipe");
}

TEST(OutputPaths, DevicesAreWrittenInPlaceWithErrorsReported) {
    if (!fs::is_character_file("/dev/full") || !fs::is_character_file("/dev/null")) {
        GTEST_SKIP() << "no /dev/full or /dev/null";
    }
    // Reached through links in a temporary directory: code that regressed to renaming
    // replaces a link there, never the machine's device nodes (as root it would).
    const vkf::test::TempDir dir("vkf-output-paths");
    fs::create_symlink("/dev/null", dir.path() / "null");
    fs::create_symlink("/dev/full", dir.path() / "full");
    vkf::write_file_atomically(dir.path() / "null", "nothing", "test file");
    EXPECT_TRUE(fs::is_character_file(dir.path() / "null"));
    const std::string e = error_message([&] { vkf::write_file_atomically(dir.path() / "full", "lost", "plot"); });
    EXPECT_TRUE(contains(e, "write failed: No space left on device")) << e;
    EXPECT_TRUE(fs::is_character_file(dir.path() / "full"));
}

}  // namespace
