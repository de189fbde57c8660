#include "host/text/unicode.hpp"

#include "base/error.hpp"
#include "host/text/utf8.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace vkf::text {
namespace {

utf8proc_category_t category(char32_t c) {
    return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

}  // namespace

bool is_white_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::size_t skip_white_space(std::string_view text, std::size_t pos) {
    while (pos < text.size()) {
        const Utf8Char c = utf8_char(text, pos);
        if (!is_white_space(c.code_point)) {
            break;
        }
        pos += c.size;
    }
    return pos;
}

std::size_t white_space_before(std::string_view text, std::size_t end) {
    while (end > 0) {
        const std::size_t start = utf8_previous(text, end);
        if (!is_white_space(utf8_char(text, start).code_point)) {
            break;
        }
        end = start;
    }
    return end;
}

bool is_numeric(char32_t c) {
    const utf8proc_category_t cat = category(c);
    return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(char32_t c) {
    if (c < 0x80) {
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
               (c >= 0x7B && c <= 0x7E);
    }
    const utf8proc_category_t cat = category(c);
    return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool is_control_format_or_private_use(char32_t c) {
    const utf8proc_category_t cat = category(c);
    return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CO;
}

bool is_nonspacing_mark(char32_t c) {
    return category(c) == UTF8PROC_CATEGORY_MN;
}

std::string normalize(std::string_view text, NormalForm form) {
    int options = UTF8PROC_STABLE;
    switch (form) {
        case NormalForm::NFC:
            options |= UTF8PROC_COMPOSE;
            break;
        case NormalForm::NFD:
            options |= UTF8PROC_DECOMPOSE;
            break;
        case NormalForm::NFKC:
            options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
            break;
        case NormalForm::NFKD:
            options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
            break;
    }
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t size =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                     &mapped, static_cast<utf8proc_option_t>(options));
    const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
    if (size < 0) {
        throw Error(std::string("Unicode normalization failed: ") + utf8proc_errmsg(size));
    }
    return std::string(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(size));
}

std::string lowercase(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        const Utf8Char c = utf8_char(text, pos);
        pos += c.size;
        if (c.code_point < 0x80) {
            out += static_cast<char>(c.code_point >= 'A' && c.code_point <= 'Z' ? c.code_point + 32 : c.code_point);
        } else if (c.code_point == 0x130) {
            // The one character whose lowercase is two (SpecialCasing.txt): İ -> i + combining dot above.
            out += "i\xCC\x87";
        } else {
            append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c.code_point))));
        }
    }
    return out;
}

}  // namespace vkf::text
