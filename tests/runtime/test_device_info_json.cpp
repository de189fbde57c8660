// The JSON forms of device information (runtime/device_info_json.hpp): complete objects,
// the struct fields' names, null for a missing compute queue family.

#include "runtime/device_info_json.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vkf {
namespace {

TEST(DeviceInfoJson, WritesCompleteObjectsAndMarksAMissingQueueFamily) {
    DeviceInfo info;
    info.name = "Test \"GPU\"";
    info.api_version = VK_MAKE_API_VERSION(0, 1, 3, 230);
    info.device_uuid[0] = 0xab;
    info.compute_queue_family = UINT32_MAX;
    info.memory_heaps = {MemoryHeapInfo{.size = 1ull << 33, .device_local = true}};
    const nlohmann::ordered_json json = {info, ComputeLimits{},
                                         DriverQuirks{.avoid_fp16_arithmetic = true, .reasons = {"why"}}};
    const std::string s = json.dump();
    EXPECT_NE(s.find(R"("name":"Test \"GPU\"")"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("api_version":"1.3.230","api_version_raw":4206822)"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("device_uuid":"ab000000000000000000000000000000")"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("memory_heaps":[{"size":8589934592,"device_local":true,"host_visible":false}])"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find(R"("compute_queue_family":null)"), std::string::npos) << s;
    EXPECT_NE(s.find(R"("compute_units":null)"), std::string::npos) << s;  // unknown
    EXPECT_NE(s.find(R"("max_per_stage_storage_buffers":0,"max_descriptor_set_storage_buffers":0)"), std::string::npos)
        << s;
    info.compute_units = 132;
    const std::string known = nlohmann::ordered_json(info).dump();
    EXPECT_NE(known.find(R"("compute_units":132)"), std::string::npos) << known;
    EXPECT_NE(
        s.find(
            R"("avoid_fp16_arithmetic":true,"avoid_subgroup_ops":false,"avoid_loop_unrolling":false,"reasons":["why"])"),
        std::string::npos)
        << s;
}

}  // namespace
}  // namespace vkf
