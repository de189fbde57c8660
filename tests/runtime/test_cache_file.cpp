// The runtime's own file I/O (runtime/cache_file.hpp): the rules of host/util/files.hpp for
// the one file the runtime keeps, the pipeline cache, without including host/.

#include "runtime/cache_file.hpp"
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

TEST(CacheFile, WritesItsPartsAndReadsThemBack) {
    const TempDir dir("vkf-cache-file");
    const std::filesystem::path file = dir.path() / "cache.bin";
    const std::string head = "header", body(70000, 'x');
    const std::span<const std::byte> parts[] = {bytes_of(head), bytes_of(body)};
    write_cache_file(file, parts, "pipeline cache");
    EXPECT_EQ(read_cache_file(file, 1 << 20, "pipeline cache"), head + body);
    EXPECT_EQ(directory_listing(dir.path()), std::vector<std::string>{"cache.bin"});  // no temporary left
}

TEST(CacheFile, RefusesWhatIsNotARegularFileOfItsSize) {
    const TempDir dir("vkf-cache-file");
    const std::filesystem::path fifo = dir.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Opened non-blocking: a FIFO without a writer is refused at once, not waited on.
    EXPECT_NE(error_message([&] {
                  read_cache_file(fifo, 100, "pipeline cache");
              }).find("is a FIFO (named pipe), not a regular file"),
              std::string::npos);
    EXPECT_NE(error_message([&] { read_cache_file(dir.path(), 100, "pipeline cache"); }).find("is a directory"),
              std::string::npos);
    const std::filesystem::path big = dir.path() / "big";
    const std::string too_long(101, 'x');
    const std::span<const std::byte> parts[] = {bytes_of(too_long)};
    write_cache_file(big, parts, "pipeline cache");
    const std::string message = error_message([&] { read_cache_file(big, 100, "pipeline cache"); });
    EXPECT_NE(message.find("101 bytes, over the limit of 100 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("pipeline cache '" + big.string() + "'"), std::string::npos) << message;
}

TEST(CacheFile, ReplacesTheFileALinkLeadsToAndKeepsTheLink) {
    const TempDir dir("vkf-cache-file");
    const std::filesystem::path real = dir.path() / "real.bin", link = dir.path() / "link.bin";
    const std::string old_text = "old", new_text = "new";
    const std::span<const std::byte> old_parts[] = {bytes_of(old_text)};
    write_cache_file(real, old_parts, "pipeline cache");
    std::filesystem::create_symlink(real, link);
    const std::span<const std::byte> new_parts[] = {bytes_of(new_text)};
    write_cache_file(link, new_parts, "pipeline cache");
    EXPECT_TRUE(std::filesystem::is_symlink(link));
    EXPECT_EQ(contents(real), "new");
}

TEST(CacheFile, AFullDiskLeavesTheOldFileAndNoTemporary) {
    const TempDir dir("vkf-cache-file");
    const std::filesystem::path file = dir.path() / "cache.bin";
    const std::string old_text = "old", body(100000, 'y');
    const std::span<const std::byte> old_parts[] = {bytes_of(old_text)};
    write_cache_file(file, old_parts, "pipeline cache");
    const std::span<const std::byte> parts[] = {bytes_of(body)};
    const std::string message = full_disk_error(4096, [&] { write_cache_file(file, parts, "pipeline cache"); });
    EXPECT_NE(message.find("write failed"), std::string::npos) << message;
    EXPECT_EQ(contents(file), "old");
    EXPECT_EQ(directory_listing(dir.path()), std::vector<std::string>{"cache.bin"});
}

}  // namespace
}  // namespace vkf::test
