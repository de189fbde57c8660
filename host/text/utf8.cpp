#include "host/text/utf8.hpp"

namespace vkf::text {
namespace {

// The range the second byte of a sequence must lie in for each lead byte (Unicode Table 3-7);
// every later byte is 0x80..0xBF.
struct Lead {
    std::uint32_t size;
    unsigned char second_min;
    unsigned char second_max;
};

Lead lead_of(unsigned char b) {
    if (b < 0x80) {
        return {1, 0, 0};
    }
    if (b >= 0xC2 && b <= 0xDF) {
        return {2, 0x80, 0xBF};
    }
    if (b == 0xE0) {
        return {3, 0xA0, 0xBF};
    }
    if (b == 0xED) {
        return {3, 0x80, 0x9F};  // no surrogates
    }
    if (b >= 0xE1 && b <= 0xEF) {
        return {3, 0x80, 0xBF};
    }
    if (b == 0xF0) {
        return {4, 0x90, 0xBF};
    }
    if (b >= 0xF1 && b <= 0xF3) {
        return {4, 0x80, 0xBF};
    }
    if (b == 0xF4) {
        return {4, 0x80, 0x8F};  // nothing above U+10FFFF
    }
    return {0, 0, 0};  // 0x80..0xC1, 0xF5..0xFF never start a character
}

}  // namespace

Utf8Step utf8_step(std::string_view bytes, std::size_t pos) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
    const unsigned char b0 = byte(pos);
    const Lead lead = lead_of(b0);
    if (lead.size == 1) {
        return {Utf8Step::Kind::Char, 1, b0};
    }
    if (lead.size == 0) {
        return {Utf8Step::Kind::Invalid, 1, 0};
    }
    char32_t cp = b0 & (0xFF >> (lead.size + 1));
    for (std::uint32_t i = 1; i < lead.size; ++i) {
        if (pos + i >= bytes.size()) {
            return {Utf8Step::Kind::Truncated, i, 0};
        }
        const unsigned char b = byte(pos + i);
        const bool fits = i == 1 ? (b >= lead.second_min && b <= lead.second_max) : (b >= 0x80 && b <= 0xBF);
        if (!fits) {
            return {Utf8Step::Kind::Invalid, i, 0};
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    return {Utf8Step::Kind::Char, lead.size, cp};
}

Utf8Char utf8_char(std::string_view text, std::size_t pos) {
    const Utf8Step step = utf8_step(text, pos);
    return {step.code_point, step.size};
}

std::size_t utf8_previous(std::string_view text, std::size_t end) {
    std::size_t pos = end - 1;
    while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) {
        --pos;
    }
    return pos;
}

std::size_t find_invalid_utf8(std::string_view bytes) {
    for (std::size_t pos = 0; pos < bytes.size();) {
        if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
            ++pos;
            continue;
        }
        const Utf8Step step = utf8_step(bytes, pos);
        if (step.kind != Utf8Step::Kind::Char) {
            return pos;
        }
        pos += step.size;
    }
    return std::string_view::npos;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string to_valid_utf8(std::string_view bytes) {
    const std::size_t first_bad = find_invalid_utf8(bytes);
    if (first_bad == std::string_view::npos) {
        return std::string(bytes);
    }
    std::string out(bytes.substr(0, first_bad));
    for (std::size_t pos = first_bad; pos < bytes.size();) {
        const Utf8Step step = utf8_step(bytes, pos);
        if (step.kind == Utf8Step::Kind::Char) {
            out.append(bytes.substr(pos, step.size));
        } else {
            append_utf8(out, U'\uFFFD');
        }
        pos += step.size;
    }
    return out;
}

std::size_t complete_utf8_prefix(std::string_view bytes) {
    // A truncated character is at most 3 bytes long and its lead byte starts it.
    const std::size_t from = bytes.size() > 3 ? bytes.size() - 3 : 0;
    for (std::size_t pos = from; pos < bytes.size(); ++pos) {
        const unsigned char b = static_cast<unsigned char>(bytes[pos]);
        if (b >= 0xC2 && b <= 0xF4 && utf8_step(bytes, pos).kind == Utf8Step::Kind::Truncated) {
            return pos;
        }
    }
    return bytes.size();
}

}  // namespace vkf::text
