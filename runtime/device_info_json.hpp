#pragma once
// JSON forms of what vkformer knows about a device, for vkf-info --json and for the
// device section of benchmark result files: nlohmann::ordered_json j = info; Keys are the
// struct fields' names, so a reader of the JSON can look the meaning up in
// device_info.hpp, limits.hpp, quirks.hpp.

#include "runtime/device_info.hpp"
#include "runtime/limits.hpp"
#include "runtime/quirks.hpp"

#include <nlohmann/json.hpp>

namespace vkf {

void to_json(nlohmann::ordered_json& json, const DeviceInfo& info);
void to_json(nlohmann::ordered_json& json, const ComputeLimits& limits);
void to_json(nlohmann::ordered_json& json, const DriverQuirks& quirks);

}  // namespace vkf
