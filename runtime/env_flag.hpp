#pragma once
// An on/off environment variable (VKF_VALIDATION): the usual spellings of true and false, and
// anything else refused, so that VKF_VALIDATION=yes cannot silently mean off.

#include <string_view>

namespace vkf {

// true for 1, yes, true, on; false for 0, no, false, off and the empty string (case
// insensitive, no spaces). Throws vkf::Error naming `source` (e.g. "VKF_VALIDATION") and
// the text otherwise.
bool parse_env_flag(std::string_view text, std::string_view source);

}  // namespace vkf
