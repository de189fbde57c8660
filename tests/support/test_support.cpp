#include "tests/support/test_support.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <random>

namespace vkf::test {

TempDir::TempDir(const std::string& prefix) {
    std::random_device entropy;
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "_" + std::to_string(stamp) + "_" + std::to_string(entropy()));
    std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::string error_message(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& error) {
        return error.what();
    }
    ADD_FAILURE() << "no vkf::Error thrown";
    return {};
}

std::string full_disk_error(std::uint64_t limit, const std::function<void()>& write) {
    struct rlimit saved {};
    EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    const auto previous = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limited = saved;
    limited.rlim_cur = limit;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
    std::string message;
    try {
        write();
        ADD_FAILURE() << "no vkf::Error thrown on a full disk";
    } catch (const Error& e) {
        message = e.what();
    }
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
    std::signal(SIGXFSZ, previous);
    return message;
}

std::vector<std::string> directory_listing(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<std::uint32_t> random_words(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::uint32_t> out(n);
    for (auto& w : out) {
        w = static_cast<std::uint32_t>(rng());
    }
    return out;
}

std::vector<std::uint32_t> random_token_ids(std::size_t n, std::uint32_t vocab, std::uint64_t seed) {
    std::vector<std::uint32_t> ids(n);
    std::uint64_t s = seed;
    for (auto& id : ids) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;  // a 64-bit LCG: same ids everywhere
        id = static_cast<std::uint32_t>((s >> 33) % vocab);
    }
    return ids;
}

}  // namespace vkf::test
