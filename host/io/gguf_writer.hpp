#pragma once
// Writes GGUF files (version 3, little-endian) as llama.cpp's gguf-py writes them: the header,
// the metadata key/values in the order given, the tensor infos, padding to the alignment, then
// each tensor's bytes at an offset that is a multiple of the alignment (general.alignment when
// the metadata sets it, 32 otherwise), each tensor padded to the alignment.
//
// Tensors are produced a band of rows at a time while the file is written, so a model of any
// size is written holding at most kGgufWriteBandBytes of one tensor. The file is written through
// AtomicFile (base/files.hpp): every write is checked and a failure (a full disk, an unwritable
// directory) is an error naming the file and the system's reason, leaving no partial file.

#include "host/io/gguf.hpp"
#include "host/io/safetensors_writer.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

// One tensor to write. dims as the file stores them, innermost first (ggml's ne: a PyTorch
// [rows, k] matrix is {k, rows}); dims[0] must be a multiple of the type's block.
struct GgufTensorSource {
    std::string name;
    std::vector<std::uint64_t> dims;
    GgmlType type = GgmlType::F32;
    // Fills the stored bytes of `rows` consecutive rows (a row: dims[0] elements) from
    // first_row; `out` holds exactly their bytes in the type's block layout.
    std::function<void(std::uint64_t first_row, std::uint64_t rows, std::span<std::byte> out)> fill;
};

// Most bytes of a tensor produced at once.
inline constexpr std::uint64_t kGgufWriteBandBytes = std::uint64_t{8} << 20;

// Bytes of a tensor of this type and dims; throws vkf::Error naming the tensor when dims[0] is
// not a multiple of the type's block, the type is unknown, or the size overflows 64 bits.
std::uint64_t gguf_tensor_bytes(const GgufTensorSource& tensor);

// Writes the file. Keys must be unique and UTF-8 (as the reader demands), arrays hold values of
// their element_type and no nested arrays; a general.alignment present must be a uint32 power of
// two. Throws vkf::Error naming the file (and the key or tensor) on any failure; checks the free
// space first. `progress` is called after each band.
void write_gguf_file(const std::filesystem::path& path, std::span<const GgufKeyValue> metadata,
                     std::span<const GgufTensorSource> tensors, const CheckpointProgressCallback& progress = {});

// Metadata values, typed as gguf-py's add_uint32, add_float32, ... write them.
GgufValue gguf_uint32(std::uint32_t value);
GgufValue gguf_int32(std::int32_t value);
GgufValue gguf_float32(float value);
GgufValue gguf_bool(bool value);
GgufValue gguf_string(std::string value);
GgufValue gguf_string_array(std::vector<std::string> values);
GgufValue gguf_int32_array(std::span<const std::int32_t> values);

}  // namespace vkf
