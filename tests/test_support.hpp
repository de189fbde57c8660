#pragma once
// Shared by the Vulkan test suites: contexts with the validation layer on and a message
// sink that fails the running test on any validation warning or error.

#include "runtime/context.hpp"
#include "runtime/error.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vkf::test {

// Collects warnings and errors; validation ones fail the test that is running.
class MessageSink {
public:
    void operator()(MessageSeverity severity, std::string_view message);
    std::vector<std::string> take(); // every message since the last take
    std::size_t validation_count() const;

private:
    mutable std::mutex mutex_;
    std::vector<std::string> messages_;
    std::size_t validation_ = 0;
};

// Options for a test context: validation on, the sink attached, no disk pipeline cache.
ContextOptions test_options(MessageSink& sink, LimitOverrides limits = {});

// One context per suite, shared by its tests (creating one per test is slow under validation).
class VulkanTest : public ::testing::Test {
public:
    static void SetUpTestSuite();
    static void TearDownTestSuite();

protected:
    void SetUp() override;
    void TearDown() override; // fails the test if validation spoke during it
    static Context& ctx() { return *context_; }
    static MessageSink& sink() { return *sink_; }

private:
    static std::unique_ptr<MessageSink> sink_;
    static std::unique_ptr<Context> context_;
    std::size_t messages_before_ = 0;
};

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

// Random 32-bit words / floats for round trips and kernels.
std::vector<std::uint32_t> random_words(std::size_t n, std::uint64_t seed);

} // namespace vkf::test
