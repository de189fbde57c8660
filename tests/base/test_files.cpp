// The file rules of base/files.hpp as the runtime's pipeline cache uses them (read_file with
// its size limit; AtomicFile written in parts), linked against vkf_base alone: the runtime
// reaches them without including host/.

#include "base/files.hpp"
#include "tests/support/test_support.hpp"

#include <sys/stat.h>

#include <fstream>

namespace vkf::test {
namespace {

// A view of `s`, which must outlive it (a named string, not a temporary).
std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span<const char>(s));
}

std::string contents(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes `parts` one after the other through one AtomicFile, as the pipeline cache writes its
// header and payload.
void write_parts(const std::filesystem::path& path, std::initializer_list<std::string> parts) {
    AtomicFile file(path, "pipeline cache");
    for (const std::string& part : parts) {
        file.write(bytes_of(part));
    }
    file.commit();
}

TEST(Files, WritesPartsAndReadsThemBack) {
    const TempDir dir("vkf-base-files");
    const std::filesystem::path file = dir.path() / "cache.bin";
    const std::string head = "header", body(70000, 'x');
    write_parts(file, {head, body});
    EXPECT_EQ(read_file(file, 1 << 20, "pipeline cache"), head + body);
    EXPECT_EQ(directory_listing(dir.path()), std::vector<std::string>{"cache.bin"});  // no temporary left
}

TEST(Files, RefusesWhatIsNotARegularFileOfItsSize) {
    const TempDir dir("vkf-base-files");
    const std::filesystem::path fifo = dir.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Opened non-blocking: a FIFO without a writer is refused at once, not waited on.
    EXPECT_NE(error_message([&] {
                  read_file(fifo, 100, "pipeline cache");
              }).find("is a FIFO (named pipe), not a regular file"),
              std::string::npos);
    EXPECT_NE(error_message([&] { read_file(dir.path(), 100, "pipeline cache"); }).find("is a directory"),
              std::string::npos);
    const std::filesystem::path big = dir.path() / "big";
    write_parts(big, {std::string(101, 'x')});
    const std::string message = error_message([&] { read_file(big, 100, "pipeline cache"); });
    EXPECT_NE(message.find("101 bytes is too large for pipeline cache (the limit is 100 bytes)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("pipeline cache '" + big.string() + "'"), std::string::npos) << message;
}

TEST(Files, ReplacesTheFileALinkLeadsToAndKeepsTheLink) {
    const TempDir dir("vkf-base-files");
    const std::filesystem::path real = dir.path() / "real.bin", link = dir.path() / "link.bin";
    write_parts(real, {"old"});
    std::filesystem::create_symlink(real, link);
    write_parts(link, {"new"});
    EXPECT_TRUE(std::filesystem::is_symlink(link));
    EXPECT_EQ(contents(real), "new");
}

TEST(Files, AFullDiskLeavesTheOldFileAndNoTemporary) {
    const TempDir dir("vkf-base-files");
    const std::filesystem::path file = dir.path() / "cache.bin";
    write_parts(file, {"old"});
    const std::string message = full_disk_error(4096, [&] { write_parts(file, {std::string(100000, 'y')}); });
    EXPECT_NE(message.find("write failed"), std::string::npos) << message;
    EXPECT_EQ(contents(file), "old");
    EXPECT_EQ(directory_listing(dir.path()), std::vector<std::string>{"cache.bin"});
}

}  // namespace
}  // namespace vkf::test
