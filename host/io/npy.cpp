#include "host/io/npy.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <optional>

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/format.hpp"
#include "host/util/endian.hpp"
#include "host/util/half.hpp"

namespace vkf {
namespace {

constexpr std::array<unsigned char, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kHeaderAlignment = 64;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& problem) {
    throw Error("npy file '" + path.string() + "': " + problem);
}

struct DescrEntry {
    DType dtype;
    std::string_view descr;
};

// The dtypes vkformer exchanges through .npy files, little-endian.
constexpr std::array<DescrEntry, 5> kDescrs = {{
    {.dtype = DType::F32, .descr = "<f4"},
    {.dtype = DType::F16, .descr = "<f2"},
    {.dtype = DType::I32, .descr = "<i4"},
    {.dtype = DType::U32, .descr = "<u4"},
    {.dtype = DType::I64, .descr = "<i8"},
}};

std::optional<DType> dtype_from_descr(std::string_view descr) {
    for (const DescrEntry& entry : kDescrs) {
        if (entry.descr == descr) {
            return entry.dtype;
        }
    }
    return std::nullopt;
}

// Product of the dimensions, or nullopt when it overflows size_t.
std::optional<std::size_t> checked_element_count(std::span<const std::size_t> shape) {
    std::size_t count = 1;
    for (std::size_t dim : shape) {
        if (dim != 0 && count > std::numeric_limits<std::size_t>::max() / dim) {
            return std::nullopt;
        }
        count *= dim;
    }
    return count;
}

struct NpyHeader {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::size_t> shape;
};

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// restricted to what NumPy writes: exactly the keys descr (a string), fortran_order
// (True or False) and shape (a tuple of non-negative integers).
class HeaderParser {
public:
    HeaderParser(const std::filesystem::path& path, std::string_view text) : path_(path), text_(text) {}

    NpyHeader parse() {
        NpyHeader header;
        bool seen_descr = false, seen_fortran_order = false, seen_shape = false;
        expect('{');
        while (!consume('}')) {
            const std::string key = parse_string();
            expect(':');
            if (key == "descr" && !seen_descr) {
                header.descr = parse_string();
                seen_descr = true;
            } else if (key == "fortran_order" && !seen_fortran_order) {
                header.fortran_order = parse_bool();
                seen_fortran_order = true;
            } else if (key == "shape" && !seen_shape) {
                header.shape = parse_shape();
                seen_shape = true;
            } else {
                error("unexpected or repeated key '" + key + "'");
            }
            if (!consume(',')) {
                expect('}');
                break;
            }
        }
        skip_space();
        if (pos_ != text_.size()) {
            error("unexpected text after the closing '}'");
        }
        if (!seen_descr || !seen_fortran_order || !seen_shape) {
            error("missing key '" +
                  std::string(!seen_descr           ? "descr"
                              : !seen_fortran_order ? "fortran_order"
                                                    : "shape") +
                  "'");
        }
        return header;
    }

private:
    [[noreturn]] void error(const std::string& problem) const {
        fail(path_, "unparsable header dictionary (" + problem + " at offset " + fmt::to_string(pos_) +
                        "): " + printable_excerpt());
    }

    // The header for the message: without its padding, cut short, control bytes as '?'.
    std::string printable_excerpt() const {
        constexpr std::size_t kMaxChars = 200;
        std::string_view text = text_;
        while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) {
            text.remove_suffix(1);
        }
        std::string excerpt(text.substr(0, kMaxChars));
        for (char& c : excerpt) {
            if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
                c = '?';
            }
        }
        return text.size() > kMaxChars ? excerpt + "..." : excerpt;
    }

    void skip_space() {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
            ++pos_;
        }
    }

    bool consume(char c) {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    void expect(char c) {
        if (!consume(c)) {
            error(std::string("expected '") + c + "'");
        }
    }

    bool consume_word(std::string_view word) {
        skip_space();
        if (text_.substr(pos_, word.size()) == word) {
            pos_ += word.size();
            return true;
        }
        return false;
    }

    // A quoted string without escapes, which is all NumPy writes for these keys.
    std::string parse_string() {
        skip_space();
        if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
            error("expected a quoted string");
        }
        const char quote = text_[pos_++];
        const std::size_t end = text_.find(quote, pos_);
        if (end == std::string_view::npos) {
            error("unterminated string");
        }
        std::string value(text_.substr(pos_, end - pos_));
        if (value.find('\\') != std::string::npos) {
            error("escape sequences are not supported");
        }
        pos_ = end + 1;
        return value;
    }

    bool parse_bool() {
        if (consume_word("True")) {
            return true;
        }
        if (consume_word("False")) {
            return false;
        }
        error("expected True or False");
    }

    std::size_t parse_dimension() {
        skip_space();
        const std::size_t start = pos_;
        std::size_t value = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const auto digit = static_cast<std::size_t>(text_[pos_] - '0');
            if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) {
                error("dimension too large");
            }
            value = value * 10 + digit;
            ++pos_;
        }
        if (pos_ == start) {
            error("expected a non-negative integer");
        }
        if (pos_ < text_.size() && text_[pos_] == 'L') {
            ++pos_;  // Python 2 long suffix, found in old files
        }
        return value;
    }

    // "()", "(5,)", "(2, 3)" or "(2, 3,)". "(5)" is an int in Python, not a tuple.
    std::vector<std::size_t> parse_shape() {
        expect('(');
        std::vector<std::size_t> shape;
        bool trailing_comma = false;
        while (!consume(')')) {
            shape.push_back(parse_dimension());
            trailing_comma = consume(',');
            if (!trailing_comma) {
                expect(')');
                break;
            }
        }
        if (shape.size() == 1 && !trailing_comma) {
            error("shape '(n)' is not a tuple; a one-dimensional shape is written '(n,)'");
        }
        return shape;
    }

    const std::filesystem::path& path_;
    std::string_view text_;
    std::size_t pos_ = 0;
};

// Largest header accepted: numpy writes a few hundred bytes; a megabyte is absurd already.
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{1} << 20;

// Reads and checks everything but the data: magic, version, header, dtype, and that the file
// holds exactly the bytes the shape needs.
NpyInfo read_header(const ReadableFile& file) {
    const std::filesystem::path& path = file.path();
    std::array<std::byte, 12> start{};
    const std::size_t start_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), start.size()));
    file.read_at(0, std::span(start.data(), start_bytes));

    const std::size_t magic_bytes = std::min(start_bytes, kMagic.size());
    for (std::size_t i = 0; i < magic_bytes; ++i) {
        if (start[i] != static_cast<std::byte>(kMagic[i])) {
            fail(path, "bad magic: not a .npy file");
        }
    }
    if (start_bytes < kMagic.size() + 2) {
        fail(path, "truncated header: the file has only " + fmt::to_string(file.size()) + " bytes");
    }
    const auto major = static_cast<unsigned>(start[6]);
    const auto minor = static_cast<unsigned>(start[7]);
    if (minor != 0 || major < 1 || major > 3) {
        fail(path, "unsupported format version " + fmt::to_string(major) + "." + fmt::to_string(minor) +
                       " (1.0, 2.0 and 3.0 are supported)");
    }
    // Version 1.0 stores the header length in 2 bytes, versions 2.0 and 3.0 in 4.
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    const std::size_t preamble = kMagic.size() + 2 + length_bytes;
    if (start_bytes < preamble) {
        fail(path, "truncated header: the file has only " + fmt::to_string(file.size()) + " bytes");
    }
    const std::uint64_t header_length = load_le<std::uint32_t>(start.data() + 8, length_bytes);
    if (header_length > file.size() - preamble) {
        fail(path, "header length " + fmt::to_string(header_length) + " extends beyond the end of the file (" +
                       fmt::to_string(file.size()) + " bytes)");
    }
    if (header_length > kMaxHeaderBytes) {
        fail(path, "header length " + fmt::to_string(header_length) + " is absurdly large (the limit is " +
                       fmt::to_string(kMaxHeaderBytes) + " bytes)");
    }
    std::string header_text(static_cast<std::size_t>(header_length), '\0');
    file.read_at(preamble, std::as_writable_bytes(std::span<char>(header_text)));
    const NpyHeader header = HeaderParser(path, header_text).parse();

    const std::optional<DType> dtype = dtype_from_descr(header.descr);
    if (!dtype) {
        if (!header.descr.empty() && header.descr[0] == '>') {
            fail(path, "big-endian dtype '" + header.descr + "' is not supported");
        }
        fail(path, "unsupported dtype '" + header.descr + "' (supported: <f4, <f2, <i4, <u4, <i8)");
    }
    if (header.fortran_order) {
        fail(path, "Fortran-order (column-major) arrays are not supported");
    }

    const std::optional<std::size_t> count = checked_element_count(header.shape);
    const std::size_t element_bytes = element_size(*dtype);
    if (!count || *count > std::numeric_limits<std::size_t>::max() / element_bytes) {
        fail(path, "shape " + shape_text(header.shape) + " is too large");
    }
    const std::uint64_t expected = std::uint64_t{*count} * element_bytes;
    const std::uint64_t data_offset = preamble + header_length;
    const std::uint64_t actual = file.size() - data_offset;
    if (actual != expected) {
        fail(path, "data section has " + fmt::to_string(actual) + " bytes but shape " + shape_text(header.shape) +
                       " of " + header.descr + " needs " + fmt::to_string(expected) +
                       (actual < expected ? " (truncated)" : " (trailing bytes)"));
    }
    return NpyInfo{.dtype = *dtype, .shape = header.shape, .data_offset = data_offset, .data_bytes = expected};
}

std::string shape_tuple(std::span<const std::size_t> shape) {
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        text += fmt::to_string(shape[i]);
        text += shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "";
    }
    return text + ")";
}

}  // namespace

std::size_t NpyArray::element_count() const {
    const std::optional<std::size_t> count = checked_element_count(shape);
    if (!count) {
        throw Error("npy: element count of shape " + shape_text(shape) + " overflows");
    }
    return *count;
}

std::string_view npy_descr(DType dtype) {
    for (const DescrEntry& entry : kDescrs) {
        if (entry.dtype == dtype) {
            return entry.descr;
        }
    }
    throw Error(std::string("npy: dtype ") + to_string(dtype) + " cannot be stored in a .npy file by vkformer");
}

NpyInfo read_npy_header(const std::filesystem::path& path) {
    const ReadableFile file(path, "npy file");
    return read_header(file);
}

NpyArray read_npy(const std::filesystem::path& path, std::uint64_t max_data_bytes) {
    const ReadableFile file(path, "npy file");
    const NpyInfo info = read_header(file);
    if (info.data_bytes > max_data_bytes) {
        fail(path, "its " + shape_text(info.shape) + " array of " + std::string(npy_descr(info.dtype)) + " holds " +
                       size_text(info.data_bytes) + ", more than the " + size_text(max_data_bytes) + " allowed here");
    }
    NpyArray array{.dtype = info.dtype, .shape = info.shape, .data = {}};
    try {
        array.data.resize(static_cast<std::size_t>(info.data_bytes));
    } catch (const std::bad_alloc&) {
        fail(path, "cannot allocate " + size_text(info.data_bytes) + " of host memory for its data");
    }
    file.read_at(info.data_offset, array.data);
    return array;
}

void write_npy(const std::filesystem::path& path, DType dtype, std::span<const std::size_t> shape,
               std::span<const std::byte> data) {
    const std::optional<std::size_t> count = checked_element_count(shape);
    const std::size_t element_bytes = element_size(dtype);
    if (!count || *count > std::numeric_limits<std::size_t>::max() / element_bytes ||
        data.size() != *count * element_bytes) {
        throw Error("write_npy '" + path.string() + "': " + fmt::to_string(data.size()) +
                    " data bytes do not match shape " + shape_text(shape) + " of " + std::string(npy_descr(dtype)));
    }

    std::string header = "{'descr': '" + std::string(npy_descr(dtype)) +
                         "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
    // Version 1.0 unless the header needs more than its 16-bit length field.
    std::size_t preamble = kMagic.size() + 2 + 2;
    const std::size_t unpadded = preamble + header.size() + 1;  // + the final '\n'
    std::size_t padded = (unpadded + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment;
    unsigned major = 1;
    if (padded - preamble > 0xffff) {
        major = 2;
        preamble += 2;
        padded = (unpadded + 2 + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment;
    }
    header.append(padded - preamble - header.size() - 1, ' ');
    header.push_back('\n');

    std::string preamble_bytes(kMagic.begin(), kMagic.end());
    preamble_bytes.push_back(static_cast<char>(major));
    preamble_bytes.push_back(0);
    const std::size_t header_length = header.size();
    for (std::size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) {
        preamble_bytes.push_back(static_cast<char>((header_length >> (8 * i)) & 0xff));
    }

    AtomicFile file(path, "npy file");
    file.write(preamble_bytes);
    file.write(header);
    file.write(data);
    file.commit();
}

void write_npy_f32(const std::filesystem::path& path, std::span<const std::size_t> shape,
                   std::span<const float> values) {
    std::vector<std::byte> bytes(values.size() * 4);
    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto bits = std::bit_cast<std::uint32_t>(values[i]);
        for (std::size_t b = 0; b < 4; ++b) {
            bytes[i * 4 + b] = static_cast<std::byte>((bits >> (8 * b)) & 0xffu);
        }
    }
    write_npy(path, DType::F32, shape, bytes);
}

std::vector<float> npy_as_float32(const NpyArray& array) {
    const std::size_t count = array.element_count();
    const std::size_t element_bytes = element_size(array.dtype);
    if (array.data.size() != count * element_bytes) {
        throw Error("npy_as_float32: array of shape " + shape_text(array.shape) + " holds " +
                    fmt::to_string(array.data.size()) + " bytes instead of " + fmt::to_string(count * element_bytes));
    }
    if (array.dtype != DType::F32 && array.dtype != DType::F16) {
        throw Error("npy_as_float32: dtype " + std::string(npy_descr(array.dtype)) + " is not a floating-point type");
    }
    std::vector<float> values(count);
    convert_to_f32(array.dtype, array.data, values);
    return values;
}

}  // namespace vkf
