#pragma once
// Shared by the Vulkan test suites: contexts with the validation layer on and a message
// sink that fails the running test on any validation warning or error.

#include "runtime/context.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vkf::test {

// Collects warnings and errors; validation ones fail the test that is running.
class MessageSink {
public:
    void operator()(MessageSeverity severity, std::string_view message);
    std::vector<std::string> take();  // every message since the last take
    std::size_t validation_count() const;

private:
    mutable std::mutex mutex_;
    std::vector<std::string> messages_;
    std::size_t validation_ = 0;
};

// Options for a test context: validation on (unless VKF_VALIDATION=0), the sink attached, no
// disk pipeline cache.
ContextOptions test_options(MessageSink& sink, LimitOverrides limits = {});

// One context per suite, shared by its tests (creating one per test is slow under validation).
class VulkanTest : public ::testing::Test {
public:
    static void SetUpTestSuite();
    static void TearDownTestSuite();

protected:
    void SetUp() override;
    void TearDown() override;  // fails the test if validation spoke during it
    static Context& ctx() { return *context_; }
    static MessageSink& sink() { return *sink_; }

private:
    static std::unique_ptr<MessageSink> sink_;
    static std::unique_ptr<Context> context_;
    std::size_t messages_before_ = 0;
};

}  // namespace vkf::test
