#include "apps/common/text_source.hpp"

#include "base/error.hpp"
#include "host/text/utf8.hpp"

#include <fmt/format.h>

namespace vkf::app {

void check_utf8(std::string_view text, std::string_view source, std::size_t offset) {
    if (const std::size_t bad = text::find_invalid_utf8(text); bad != std::string_view::npos) {
        throw Error(fmt::format("{}: not valid UTF-8 at byte {} (0x{:02x})", source, offset + bad,
                                static_cast<unsigned char>(text[bad])));
    }
}

std::string_view without_cr(std::string_view line) {
    if (line.ends_with('\r')) {
        line.remove_suffix(1);
    }
    return line;
}

}  // namespace vkf::app
