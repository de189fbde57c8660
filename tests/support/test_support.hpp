#pragma once
// Shared by every test suite, with or without Vulkan: temporary directories, error
// messages of throwing calls, random words.

#include "base/error.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace vkf::test {

// A fresh, uniquely named directory under the system temp directory, removed with its
// contents when the object goes away.
class TempDir {
public:
    explicit TempDir(const std::string& prefix);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// The message of the vkf::Error `action` throws; a test failure and "" when it throws none.
std::string error_message(const std::function<void()>& action);

// error_message of `write` run as on a full disk: files may grow to `limit` bytes
// (RLIMIT_FSIZE; write() then fails with EFBIG as it fails with ENOSPC when the disk is full,
// SIGXFSZ ignored meanwhile), lifted again afterwards.
std::string full_disk_error(std::uint64_t limit, const std::function<void()>& write);
// The names in `dir`, sorted (temporaries included: a failed write must leave none).
std::vector<std::string> directory_listing(const std::filesystem::path& dir);

// Random 32-bit words / floats for round trips and kernels.
std::vector<std::uint32_t> random_words(std::size_t n, std::uint64_t seed);
// Seeded token ids below `vocab`, for prompts and texts of model tests.
std::vector<std::uint32_t> random_token_ids(std::size_t n, std::uint32_t vocab, std::uint64_t seed);

}  // namespace vkf::test
