#include "runtime/env_flag.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace vkf {

bool parse_env_flag(std::string_view text, std::string_view source) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    constexpr std::array<std::string_view, 4> yes = {"1", "yes", "true", "on"};
    constexpr std::array<std::string_view, 5> no = {"0", "no", "false", "off", ""};
    if (std::find(yes.begin(), yes.end(), lower) != yes.end()) {
        return true;
    }
    if (std::find(no.begin(), no.end(), lower) != no.end()) {
        return false;
    }
    throw Error(std::string(source) + "='" + std::string(text) +
                "' is neither on (1, yes, true, on) nor off (0, no, false, off)");
}

}  // namespace vkf
