// Names of Vulkan enums in messages (runtime/vk.hpp), from Vulkan-Hpp's tables.

#include "base/error.hpp"
#include "runtime/vk.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vkf {
namespace {

TEST(VkNames, ResultsHaveTheSpecificationsNames) {
    EXPECT_EQ(to_string(VK_SUCCESS), "VK_SUCCESS");
    EXPECT_EQ(to_string(VK_ERROR_DEVICE_LOST), "VK_ERROR_DEVICE_LOST");
    EXPECT_EQ(to_string(VK_ERROR_OUT_OF_DEVICE_MEMORY), "VK_ERROR_OUT_OF_DEVICE_MEMORY");
    EXPECT_EQ(to_string(VK_ERROR_VALIDATION_FAILED_EXT), "VK_ERROR_VALIDATION_FAILED_EXT");
    EXPECT_EQ(to_string(VK_PIPELINE_COMPILE_REQUIRED), "VK_PIPELINE_COMPILE_REQUIRED");
    EXPECT_EQ(to_string(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS), "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS");
    EXPECT_EQ(to_string(static_cast<VkResult>(12345)), "VkResult(12345)");
}

TEST(VkNames, DriverIds) {
    EXPECT_EQ(driver_id_name(VK_DRIVER_ID_MESA_LLVMPIPE), "MesaLlvmpipe");
    EXPECT_EQ(driver_id_name(VK_DRIVER_ID_NVIDIA_PROPRIETARY), "NvidiaProprietary");
    EXPECT_EQ(driver_id_name(0), "unknown");
}

TEST(VkNames, CheckNamesTheCallAndTheResult) {
    try {
        check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory");
        FAIL() << "no error";
    } catch (const DeviceLostError&) {
        FAIL() << "out of memory is not a lost device";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(check(VK_ERROR_DEVICE_LOST, "vkQueueSubmit"), DeviceLostError);
    EXPECT_NO_THROW(check(VK_SUCCESS, "vkQueueSubmit"));
}

}  // namespace
}  // namespace vkf
