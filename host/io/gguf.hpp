#pragma once
// GGUF files (llama.cpp's format, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
// the header, the metadata key/values, the tensor infos and where each tensor's bytes lie.
//
// A GGUF file is "GGUF", a uint32 version (2 or 3 are read; 1 used 32-bit counts and is
// refused), a uint64 tensor count, a uint64 key/value count, the key/values (a string key, a
// uint32 value type, the value), the tensor infos (a string name, a uint32 dimension count of
// at most 4, that many uint64 dimensions innermost first, a uint32 ggml type, a uint64 offset
// into the data section), padding to `general.alignment` (32 when absent), then the data
// section. Everything is little-endian: a big-endian file (llama.cpp writes them for s390x)
// is refused by name, as is every other thing that is not a GGUF file.
//
// Files come from anywhere, so open_gguf reads through files.hpp (pread, never a mapping) and
// validates the whole header before returning, refusing with a vkf::Error that names the file
// and the byte offset: a truncated file, a count, string length or array length that the rest
// of the file cannot hold (so nothing is allocated that the file's size does not bound), an
// unknown value type, a nested array (llama.cpp reads none either), a bool other than 0 or 1,
// a key or tensor name that is not UTF-8 or appears twice, a bad general.alignment, more than 4
// dimensions, an unknown ggml type (named by its number), a first dimension that is not a
// multiple of its type's block, a tensor offset that is not aligned, a tensor past the end of
// the file or overlapping another. Tensor bytes are read by offset when asked for.

#include "base/files.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace vkf {

// A metadata value's type, numbered as in the file.
enum class GgufValueType : std::uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};
// "uint8", "int32", "float32", "bool", "string", "array", ...: gguf-py's spelling.
std::string_view gguf_value_type_name(GgufValueType type);

// One metadata value. Unsigned integers are held as uint64, signed ones as int64, floats as
// double (a float32 widened exactly); arrays hold their elements, all of element_type.
struct GgufValue {
    GgufValueType type = GgufValueType::U8;
    GgufValueType element_type = GgufValueType::U8;  // arrays only
    std::variant<std::uint64_t, std::int64_t, double, bool, std::string, std::vector<GgufValue>> value;

    bool is_integer() const;
    bool is_array() const { return type == GgufValueType::Array; }
    // Each throws vkf::Error naming the type when the value is not of that kind; the integer
    // ones also when the value does not fit.
    std::uint64_t as_uint64() const;
    std::int64_t as_int64() const;
    double as_double() const;  // any float or integer type
    bool as_bool() const;
    const std::string& as_string() const;
    const std::vector<GgufValue>& as_array() const;
};

// A tensor's element type, numbered as ggml numbers it (ggml.h's enum ggml_type); numbers
// ggml has retired are unknown.
enum class GgmlType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
    Q2_0 = 42,
};

struct GgmlTypeTraits {
    std::string_view name;      // "F32", "Q8_0", ...: gguf-py's GGMLQuantizationType names
    std::uint32_t block_size;   // elements per block (1 for plain types)
    std::uint32_t block_bytes;  // bytes per block
};
// nullopt for a number ggml does not define.
std::optional<GgmlTypeTraits> ggml_type_traits(std::uint32_t type);
std::string_view ggml_type_name(GgmlType type);

struct GgufTensorInfo {
    std::string name;
    std::vector<std::uint64_t> dims;  // as in the file: innermost (contiguous) first
    GgmlType type = GgmlType::F32;
    std::uint64_t offset = 0;  // from the start of the data section
    std::uint64_t byte_size = 0;

    // The dimensions outermost first (C order, as safetensors and PyTorch write them).
    std::vector<std::uint64_t> shape() const;
    std::uint64_t element_count() const;
};

struct GgufKeyValue {
    std::string key;
    GgufValue value;
};

// One open GGUF file. Move-only.
class GgufFile {
public:
    const std::filesystem::path& path() const { return file_.path(); }
    std::uint64_t file_size() const { return file_.size(); }
    std::uint32_t version() const { return version_; }
    std::uint64_t alignment() const { return alignment_; }
    // File offset of the data section.
    std::uint64_t data_offset() const { return data_offset_; }

    // Key/values and tensors in file order.
    std::span<const GgufKeyValue> metadata() const { return metadata_; }
    std::span<const GgufTensorInfo> tensors() const { return tensors_; }

    // nullptr when absent.
    const GgufValue* find(std::string_view key) const;
    const GgufTensorInfo* find_tensor(std::string_view name) const;
    // As find, but throw vkf::Error naming the file and the key when absent or (the typed
    // ones) of another type.
    const GgufValue& at(std::string_view key) const;
    std::string string_at(std::string_view key) const;
    std::uint64_t uint_at(std::string_view key) const;
    double float_at(std::string_view key) const;
    const GgufTensorInfo& tensor_at(std::string_view name) const;

    // The tensor's bytes as stored. Throws vkf::Error naming the file and the tensor when the
    // file was truncated since it was opened.
    std::vector<std::byte> read_raw(const GgufTensorInfo& info) const;
    // Bytes [offset, offset + out.size()) of the tensor.
    void read_raw_into(const GgufTensorInfo& info, std::uint64_t offset, std::span<std::byte> out) const;
    // "GGUF file '<path>'", for messages.
    std::string label() const { return file_.label(); }

private:
    friend GgufFile open_gguf(ReadableFile source);
    explicit GgufFile(ReadableFile file) : file_(std::move(file)) {}

    ReadableFile file_;
    std::uint32_t version_ = 0;
    std::uint64_t alignment_ = 32;
    std::uint64_t data_offset_ = 0;
    std::vector<GgufKeyValue> metadata_;
    std::vector<GgufTensorInfo> tensors_;
    std::unordered_map<std::string, std::size_t> key_index_;
    std::unordered_map<std::string, std::size_t> tensor_index_;
};

inline constexpr std::uint64_t kGgufDefaultAlignment = 32;
inline constexpr std::uint32_t kGgufMaxDims = 4;
// Array elements in all of a file's metadata, at most: a tokenizer's vocabulary, scores, types
// and merges are a few million; each element costs a GgufValue in memory.
inline constexpr std::uint64_t kGgufMaxArrayElements = std::uint64_t{1} << 24;

// Opens the file and validates everything but the tensor bytes; throws vkf::Error as
// described at the top.
GgufFile open_gguf(const std::filesystem::path& path);
// The same for a file already open: ReadableFile's window of a descriptor (an Android asset).
GgufFile open_gguf(ReadableFile source);

// True when the file starts with the GGUF magic (false when it cannot be read or is shorter).
bool looks_like_gguf(const std::filesystem::path& path);

}  // namespace vkf
