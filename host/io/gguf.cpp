#include "host/io/gguf.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "base/error.hpp"
#include "host/io/gguf_keys.hpp"
#include "host/util/endian.hpp"

namespace vkf {
namespace {

constexpr std::array<char, 4> kMagic = gguf_key::kMagic;
// Header reads go through a window of this many bytes: a tokenizer's vocabulary is hundreds of
// thousands of short strings, which would otherwise be as many pread calls.
constexpr std::size_t kWindowBytes = std::size_t{1} << 20;

// The offset of the first byte that is not part of well-formed UTF-8 (Unicode table 3-7), or
// npos.
std::size_t find_ill_formed_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t length = 0;
        unsigned char low = 0x80, high = 0xbf;
        if (b < 0x80) {
            ++i;
            continue;
        } else if (b >= 0xc2 && b <= 0xdf) {
            length = 2;
        } else if (b >= 0xe0 && b <= 0xef) {
            length = 3;
            low = b == 0xe0 ? 0xa0 : 0x80;
            high = b == 0xed ? 0x9f : 0xbf;
        } else if (b >= 0xf0 && b <= 0xf4) {
            length = 4;
            low = b == 0xf0 ? 0x90 : 0x80;
            high = b == 0xf4 ? 0x8f : 0xbf;
        } else {
            return i;
        }
        if (s.size() - i < length) {
            return i;
        }
        for (std::size_t k = 1; k < length; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xbf)) {
                return i;
            }
        }
        i += length;
    }
    return std::string_view::npos;
}

// Reads the header sequentially, refusing any read past the end of the file before anything
// is allocated for it.
class Cursor {
public:
    explicit Cursor(const ReadableFile& file) : file_(file) {}

    // Bounds the memory of the metadata, which holds every element as a GgufValue.
    std::uint64_t array_elements_left = kGgufMaxArrayElements;

    std::uint64_t position() const { return pos_; }
    std::uint64_t remaining() const { return file_.size() - pos_; }

    [[noreturn]] void fail(std::uint64_t at, const std::string& problem) const {
        throw Error(fmt::format("{}: at byte {}: {}", file_.label(), at, problem));
    }

    void read(std::span<std::byte> out, std::string_view what) {
        if (out.empty()) {
            return;  // an empty string at the end of the file: no window to copy from
        }
        if (out.size() > remaining()) {
            fail(pos_,
                 fmt::format("the file ends inside {} ({} bytes needed, {} left)", what, out.size(), remaining()));
        }
        if (out.size() > kWindowBytes) {
            file_.read_at(pos_, out);
        } else {
            if (pos_ < window_start_ || pos_ + out.size() > window_start_ + window_.size()) {
                window_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kWindowBytes, remaining())));
                window_start_ = pos_;
                file_.read_at(pos_, window_);
            }
            std::memcpy(out.data(), window_.data() + (pos_ - window_start_), out.size());
        }
        pos_ += out.size();
    }

    template <std::unsigned_integral T>
    T read_uint(std::string_view what) {
        std::array<std::byte, sizeof(T)> bytes{};
        read(bytes, what);
        return load_le<T>(bytes.data());
    }

    // A GGUF string: a uint64 length, then that many bytes.
    std::string read_string(std::string_view what) {
        const std::uint64_t at = pos_;
        const auto length = read_uint<std::uint64_t>(what);
        if (length > remaining()) {
            fail(at, fmt::format("{} has length {}, but only {} bytes of the file follow", what, length, remaining()));
        }
        std::string text(static_cast<std::size_t>(length), '\0');
        read(std::as_writable_bytes(std::span(text)), what);
        return text;
    }

    // A string that must be UTF-8 (a key or a tensor name).
    std::string read_name(std::string_view what) {
        const std::uint64_t at = pos_;
        std::string name = read_string(what);
        const std::size_t bad = find_ill_formed_utf8(name);
        if (bad != std::string_view::npos) {
            fail(at, fmt::format("{} is not UTF-8 (byte {} of it)", what, bad));
        }
        return name;
    }

private:
    const ReadableFile& file_;
    std::uint64_t pos_ = 0;
    std::vector<std::byte> window_;
    std::uint64_t window_start_ = 0;
};

GgufValueType read_value_type(Cursor& in, std::string_view what) {
    const std::uint64_t at = in.position();
    const auto type = in.read_uint<std::uint32_t>(what);
    if (type > static_cast<std::uint32_t>(GgufValueType::F64)) {
        in.fail(at, fmt::format("{}: unknown value type {}", what, type));
    }
    return static_cast<GgufValueType>(type);
}

// The fewest bytes one value of the type takes in the file (a string: its length).
std::uint64_t min_value_bytes(GgufValueType type) {
    switch (type) {
        case GgufValueType::U8:
        case GgufValueType::I8:
        case GgufValueType::Bool:
            return 1;
        case GgufValueType::U16:
        case GgufValueType::I16:
            return 2;
        case GgufValueType::U32:
        case GgufValueType::I32:
        case GgufValueType::F32:
            return 4;
        default:
            return 8;
    }
}

template <class T>
T as_signed(std::uint64_t bits) {
    using U = std::make_unsigned_t<T>;
    return std::bit_cast<T>(static_cast<U>(bits));
}

GgufValue read_scalar(Cursor& in, GgufValueType type, const std::string& what) {
    GgufValue v;
    v.type = type;
    switch (type) {
        case GgufValueType::U8:
            v.value = std::uint64_t{in.read_uint<std::uint8_t>(what)};
            break;
        case GgufValueType::U16:
            v.value = std::uint64_t{in.read_uint<std::uint16_t>(what)};
            break;
        case GgufValueType::U32:
            v.value = std::uint64_t{in.read_uint<std::uint32_t>(what)};
            break;
        case GgufValueType::U64:
            v.value = in.read_uint<std::uint64_t>(what);
            break;
        case GgufValueType::I8:
            v.value = std::int64_t{as_signed<std::int8_t>(in.read_uint<std::uint8_t>(what))};
            break;
        case GgufValueType::I16:
            v.value = std::int64_t{as_signed<std::int16_t>(in.read_uint<std::uint16_t>(what))};
            break;
        case GgufValueType::I32:
            v.value = std::int64_t{as_signed<std::int32_t>(in.read_uint<std::uint32_t>(what))};
            break;
        case GgufValueType::I64:
            v.value = as_signed<std::int64_t>(in.read_uint<std::uint64_t>(what));
            break;
        case GgufValueType::F32:
            v.value = double{std::bit_cast<float>(in.read_uint<std::uint32_t>(what))};
            break;
        case GgufValueType::F64:
            v.value = std::bit_cast<double>(in.read_uint<std::uint64_t>(what));
            break;
        case GgufValueType::Bool: {
            const std::uint64_t at = in.position();
            const auto byte = in.read_uint<std::uint8_t>(what);
            if (byte > 1) {
                in.fail(at, fmt::format("{}: a bool must be 0 or 1, got {}", what, byte));
            }
            v.value = byte == 1;
            break;
        }
        case GgufValueType::String:
            v.value = in.read_string(what);
            break;
        case GgufValueType::Array:
            break;  // read_value handles arrays
    }
    return v;
}

GgufValue read_value(Cursor& in, GgufValueType type, const std::string& key) {
    if (type != GgufValueType::Array) {
        return read_scalar(in, type, fmt::format("the value of '{}'", key));
    }
    const std::uint64_t at = in.position();
    const GgufValueType element_type = read_value_type(in, fmt::format("the element type of array '{}'", key));
    if (element_type == GgufValueType::Array) {
        in.fail(at, fmt::format("'{}' is an array of arrays, which is not read (nor by llama.cpp)", key));
    }
    const std::uint64_t count_at = in.position();
    const auto count = in.read_uint<std::uint64_t>(fmt::format("the length of array '{}'", key));
    if (count > in.remaining() / min_value_bytes(element_type)) {
        in.fail(count_at, fmt::format("array '{}' claims {} elements of {}, more than the {} bytes left in the file "
                                      "can hold",
                                      key, count, gguf_value_type_name(element_type), in.remaining()));
    }
    if (count > in.array_elements_left) {
        in.fail(count_at, fmt::format("array '{}' has {} elements, beyond the {} array elements a file may hold in all",
                                      key, count, kGgufMaxArrayElements));
    }
    in.array_elements_left -= count;
    std::vector<GgufValue> elements;
    elements.reserve(static_cast<std::size_t>(count));
    const std::string what = fmt::format("an element of array '{}'", key);
    for (std::uint64_t i = 0; i < count; ++i) {
        elements.push_back(read_scalar(in, element_type, what));
    }
    GgufValue v;
    v.type = GgufValueType::Array;
    v.element_type = element_type;
    v.value = std::move(elements);
    return v;
}

// a * b, or nullopt on overflow.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) {
        return std::nullopt;
    }
    return a * b;
}

GgufTensorInfo read_tensor_info(Cursor& in) {
    GgufTensorInfo info;
    info.name = in.read_name("a tensor name");
    const std::uint64_t at = in.position();
    const auto n_dims = in.read_uint<std::uint32_t>(fmt::format("the dimension count of tensor '{}'", info.name));
    if (n_dims > kGgufMaxDims) {
        in.fail(at,
                fmt::format("tensor '{}' has {} dimensions, at most {} are allowed", info.name, n_dims, kGgufMaxDims));
    }
    for (std::uint32_t d = 0; d < n_dims; ++d) {
        info.dims.push_back(in.read_uint<std::uint64_t>(fmt::format("the dimensions of tensor '{}'", info.name)));
    }
    const std::uint64_t type_at = in.position();
    const auto type = in.read_uint<std::uint32_t>(fmt::format("the type of tensor '{}'", info.name));
    const std::optional<GgmlTypeTraits> traits = ggml_type_traits(type);
    if (!traits) {
        in.fail(type_at, fmt::format("tensor '{}' has unknown ggml type {}", info.name, type));
    }
    info.type = static_cast<GgmlType>(type);
    info.offset = in.read_uint<std::uint64_t>(fmt::format("the offset of tensor '{}'", info.name));

    const std::uint64_t inner = info.dims.empty() ? 1 : info.dims[0];
    if (inner % traits->block_size != 0) {
        in.fail(at, fmt::format("tensor '{}' of type {} has first dimension {}, not a multiple of its block size {}",
                                info.name, traits->name, inner, traits->block_size));
    }
    std::optional<std::uint64_t> bytes = checked_mul(inner / traits->block_size, traits->block_bytes);
    for (std::size_t d = 1; d < info.dims.size() && bytes; ++d) {
        bytes = checked_mul(*bytes, info.dims[d]);
    }
    if (std::find(info.dims.begin(), info.dims.end(), std::uint64_t{0}) != info.dims.end()) {
        bytes = 0;  // [2^63, 2, 0] holds nothing, whatever the other dimensions
    }
    if (!bytes || *bytes > in.remaining()) {
        in.fail(at, fmt::format("tensor '{}' of type {} and dimensions [{}] needs {} bytes, more than the file has",
                                info.name, traits->name, fmt::join(info.dims, ", "),
                                bytes ? fmt::to_string(*bytes) : std::string("more than 2^64")));
    }
    info.byte_size = *bytes;
    return info;
}

void read_alignment(const GgufFile& file, std::uint64_t& alignment) {
    const GgufValue* value = file.find(gguf_key::kAlignment);
    if (value == nullptr) {
        return;
    }
    if (value->type != GgufValueType::U32) {
        throw Error(fmt::format("{}: general.alignment must be a uint32, got a {}", file.label(),
                                gguf_value_type_name(value->type)));
    }
    alignment = value->as_uint64();
    if (alignment == 0 || !std::has_single_bit(alignment)) {
        throw Error(fmt::format("{}: general.alignment {} is not a power of two", file.label(), alignment));
    }
}

// Tensors may leave padding between them but never share bytes or run past the end.
void check_placement(const GgufFile& file, std::span<const GgufTensorInfo> tensors) {
    const std::uint64_t data_bytes = file.file_size() - file.data_offset();
    std::vector<const GgufTensorInfo*> order;
    for (const GgufTensorInfo& t : tensors) {
        if (t.offset % file.alignment() != 0) {
            throw Error(fmt::format("{}: tensor '{}' has offset {}, not a multiple of the alignment {}", file.label(),
                                    t.name, t.offset, file.alignment()));
        }
        if (t.offset > data_bytes || t.byte_size > data_bytes - t.offset) {
            throw Error(
                fmt::format("{}: tensor '{}' at data offset {} with {} bytes runs past the end of the file "
                            "(the data section has {} bytes)",
                            file.label(), t.name, t.offset, t.byte_size, data_bytes));
        }
        order.push_back(&t);
    }
    std::sort(order.begin(), order.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
        return std::pair(a->offset, a->byte_size) < std::pair(b->offset, b->byte_size);
    });
    // Against the non-empty tensor reaching furthest so far, not just the previous one: an
    // empty tensor between two others must not hide their overlap.
    const GgufTensorInfo* furthest = nullptr;
    for (const GgufTensorInfo* t : order) {
        if (t->byte_size == 0) {
            continue;
        }
        if (furthest != nullptr && t->offset < furthest->offset + furthest->byte_size) {
            throw Error(fmt::format("{}: tensor '{}' at data bytes [{}, {}) overlaps tensor '{}' at [{}, {})",
                                    file.label(), t->name, t->offset, t->offset + t->byte_size, furthest->name,
                                    furthest->offset, furthest->offset + furthest->byte_size));
        }
        if (furthest == nullptr || t->offset + t->byte_size > furthest->offset + furthest->byte_size) {
            furthest = t;
        }
    }
}

}  // namespace

GgufFile open_gguf(const std::filesystem::path& path) {
    return open_gguf(ReadableFile(path, "GGUF file"));
}

GgufFile open_gguf(ReadableFile source) {
    GgufFile file(std::move(source));
    Cursor in(file.file_);

    std::array<char, 4> magic{};
    in.read(std::as_writable_bytes(std::span(magic)), "the magic");
    if (magic != kMagic) {
        in.fail(0, "not a GGUF file (it does not start with \"GGUF\")");
    }
    const auto version = in.read_uint<std::uint32_t>("the version");
    if (version == 0x02000000u || version == 0x03000000u) {
        in.fail(4, fmt::format("a big-endian GGUF file (version {} byte-swapped); only little-endian files are read",
                               version >> 24));
    }
    if (version != 2 && version != 3) {
        in.fail(4, fmt::format("GGUF version {} is not read (versions 2 and 3 are)", version));
    }
    file.version_ = version;
    const auto n_tensors = in.read_uint<std::uint64_t>("the tensor count");
    const auto n_kv = in.read_uint<std::uint64_t>("the key/value count");
    // A key/value takes at least a length, a type and a byte; a tensor info a length, a
    // dimension count, a type and an offset.
    if (n_kv > in.remaining() / 13) {
        in.fail(16, fmt::format("{} key/values claimed, more than the {} bytes left can hold", n_kv, in.remaining()));
    }
    if (n_tensors > in.remaining() / 24) {
        in.fail(8, fmt::format("{} tensors claimed, more than the {} bytes left can hold", n_tensors, in.remaining()));
    }

    file.metadata_.reserve(static_cast<std::size_t>(n_kv));
    for (std::uint64_t i = 0; i < n_kv; ++i) {
        const std::uint64_t at = in.position();
        std::string key = in.read_name("a metadata key");
        const GgufValueType type = read_value_type(in, fmt::format("the type of '{}'", key));
        GgufValue value = read_value(in, type, key);
        if (!file.key_index_.emplace(key, file.metadata_.size()).second) {
            in.fail(at, fmt::format("metadata key '{}' appears twice", key));
        }
        file.metadata_.push_back(GgufKeyValue{std::move(key), std::move(value)});
    }
    read_alignment(file, file.alignment_);

    file.tensors_.reserve(static_cast<std::size_t>(n_tensors));
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        const std::uint64_t at = in.position();
        GgufTensorInfo info = read_tensor_info(in);
        if (!file.tensor_index_.emplace(info.name, file.tensors_.size()).second) {
            in.fail(at, fmt::format("tensor '{}' appears twice", info.name));
        }
        file.tensors_.push_back(std::move(info));
    }
    const std::uint64_t end = in.position();
    const std::uint64_t padding = (file.alignment_ - end % file.alignment_) % file.alignment_;
    if (padding > in.remaining() && !file.tensors_.empty()) {
        in.fail(end, fmt::format("the file ends before its data section (padding to {} bytes)", file.alignment_));
    }
    file.data_offset_ = std::min(end + padding, file.file_size());
    check_placement(file, file.tensors_);
    return file;
}

bool looks_like_gguf(const std::filesystem::path& path) {
    try {
        const ReadableFile file(path, "GGUF file");
        std::array<char, 4> magic{};
        if (file.size() < magic.size()) {
            return false;
        }
        file.read_at(0, std::as_writable_bytes(std::span(magic)));
        return magic == kMagic;
    } catch (const Error&) {
        return false;
    }
}

}  // namespace vkf
