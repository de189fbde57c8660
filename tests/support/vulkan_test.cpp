#include "tests/support/vulkan_test.hpp"

#include "runtime/env_flag.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace vkf::test {

void MessageSink::operator()(MessageSeverity severity, std::string_view message) {
    if (severity == MessageSeverity::Info) {
        return;
    }
    std::lock_guard lock(mutex_);
    messages_.emplace_back(message);
    if (message.starts_with("[validation]")) {
        validation_ += 1;
        ADD_FAILURE() << "Vulkan validation message: " << message;
    }
}

std::vector<std::string> MessageSink::take() {
    std::lock_guard lock(mutex_);
    return std::exchange(messages_, {});
}

std::size_t MessageSink::validation_count() const {
    std::lock_guard lock(mutex_);
    return validation_;
}

namespace {

// VKF_VALIDATION=0: a build configured with -DVKF_TEST_VALIDATION=OFF (tests/CMakeLists.txt).
bool validation_turned_off() {
    const char* validation = std::getenv("VKF_VALIDATION");
    return validation != nullptr && !parse_env_flag(validation, "VKF_VALIDATION");
}

}  // namespace

ContextOptions test_options(MessageSink& sink, LimitOverrides limits) {
    return ContextOptions{
        .validation = !validation_turned_off(),
        .on_message = [&sink](MessageSeverity s, std::string_view m) { sink(s, m); },
        .limits = std::move(limits),
        .pipeline_cache_dir = std::filesystem::path(),  // no disk cache: tests stay independent
    };
}

std::unique_ptr<MessageSink> VulkanTest::sink_;
std::unique_ptr<Context> VulkanTest::context_;

void VulkanTest::SetUpTestSuite() {
    sink_ = std::make_unique<MessageSink>();
    context_ = std::make_unique<Context>(test_options(*sink_));
}

void VulkanTest::TearDownTestSuite() {
    context_.reset();
    EXPECT_EQ(sink_->validation_count(), 0u) << "validation messages during suite teardown";
    sink_.reset();
}

void VulkanTest::SetUp() {
    ASSERT_TRUE(context_) << "no Vulkan context";
    if (!context_->validation_enabled() && !validation_turned_off()) {
        // CI installs vulkan-validationlayers; elsewhere say so, loudly, once per test.
        std::printf("note: Khronos validation layer not installed; running without it\n");
    }
    messages_before_ = sink_->validation_count();
}

void VulkanTest::TearDown() {
    EXPECT_EQ(sink_->validation_count(), messages_before_) << "validation messages during this test";
    sink_->take();
}

}  // namespace vkf::test
