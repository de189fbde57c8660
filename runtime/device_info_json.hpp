#pragma once
// JSON forms of what vkformer knows about a device, for vkf-info --json and for the
// device section of benchmark result files. Keys are the struct fields' names, so a
// reader of the JSON can look the meaning up in device_info.hpp, limits.hpp, quirks.hpp.

#include "runtime/device_info.hpp"
#include "runtime/json_writer.hpp"
#include "runtime/limits.hpp"
#include "runtime/quirks.hpp"

namespace vkf {

// Each writes one JSON object (where a value may go: top level, array element, after a key).
void write_json(JsonWriter& json, const DeviceInfo& info);
// The members of write_json(DeviceInfo) alone, into an object the caller has begun, so
// the caller can add members of its own (vkf-info adds the device's quirks).
void write_json_members(JsonWriter& json, const DeviceInfo& info);
void write_json(JsonWriter& json, const ComputeLimits& limits);
void write_json(JsonWriter& json, const DriverQuirks& quirks);

} // namespace vkf
