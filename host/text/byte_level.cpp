#include "host/text/byte_level.hpp"

#include "host/text/utf8.hpp"

#include <array>
#include <cstdint>

namespace vkf::text {
namespace {

// The characters the map uses are all below U+0100 + 68.
constexpr char32_t kAlphabetEnd = 0x100 + 68;

struct ByteLevelTables {
    std::array<std::string, 256> char_of_byte;       // UTF-8
    std::array<std::int16_t, kAlphabetEnd> byte_of;  // -1: not in the alphabet

    ByteLevelTables() {
        byte_of.fill(-1);
        char32_t next_extra = 0x100;
        for (unsigned b = 0; b < 256; ++b) {
            const bool stands_for_itself = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            const char32_t c = stands_for_itself ? static_cast<char32_t>(b) : next_extra++;
            append_utf8(char_of_byte[b], c);
            byte_of[c] = static_cast<std::int16_t>(b);
        }
    }
};

const ByteLevelTables& tables() {
    static const ByteLevelTables t;
    return t;
}

}  // namespace

std::string_view byte_level_char(unsigned char b) {
    return tables().char_of_byte[b];
}

std::string to_byte_level(std::string_view bytes) {
    const ByteLevelTables& t = tables();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char b : bytes) {
        out += t.char_of_byte[static_cast<unsigned char>(b)];
    }
    return out;
}

std::optional<std::string> from_byte_level(std::string_view text) {
    const ByteLevelTables& t = tables();
    std::string bytes;
    bytes.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        const Utf8Char c = utf8_char(text, pos);
        pos += c.size;
        if (c.code_point >= kAlphabetEnd || t.byte_of[c.code_point] < 0) {
            return std::nullopt;
        }
        bytes += static_cast<char>(t.byte_of[c.code_point]);
    }
    return bytes;
}

}  // namespace vkf::text
