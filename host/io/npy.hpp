#pragma once
// NumPy .npy files (format versions 1.0, 2.0 and 3.0), used to exchange test vectors and
// reference activations with Python. Only what vkformer needs: little-endian, C order,
// the dtypes npy_descr names.

#include "host/util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

struct NpyArray {
    DType dtype;
    std::vector<std::size_t> shape;  // empty for a 0-d array, which holds one element
    std::vector<std::byte> data;     // little-endian, C order

    std::size_t element_count() const;
};

// The descr string of a dtype: "<f4", "<f2", "<i4", "<u4" or "<i8", the dtypes vkformer
// reads and writes (others are refused with a vkf::Error).
std::string_view npy_descr(DType dtype);

// What a .npy file holds, read from its header alone.
struct NpyInfo {
    DType dtype;
    std::vector<std::size_t> shape;
    std::uint64_t data_offset = 0;  // where the data section starts in the file
    std::uint64_t data_bytes = 0;   // its size, which the shape and dtype need exactly
};

// Throws vkf::Error naming the file and the problem for anything malformed or
// unsupported: not a regular file, bad magic, unknown version, truncated header, header
// length beyond the file or over 1 MiB, unparsable header dictionary, unsupported dtype,
// big-endian data, Fortran order, or a data section shorter or longer than the shape
// implies. Reads only the header: shapes can be checked against limits before any data
// is read.
NpyInfo read_npy_header(const std::filesystem::path& path);

// The header checks of read_npy_header, then the data; an array of more than
// max_data_bytes is refused before its data is read.
NpyArray read_npy(const std::filesystem::path& path,
                  std::uint64_t max_data_bytes = std::numeric_limits<std::uint64_t>::max());

// Writes format 1.0 (2.0 only if the header would not fit 1.0's 16-bit length), header
// padded with spaces so that the data starts at a multiple of 64 bytes. Throws vkf::Error
// when data.size() does not match the shape and dtype, or when writing fails.
void write_npy(const std::filesystem::path& path, DType dtype, std::span<const std::size_t> shape,
               std::span<const std::byte> data);

// write_npy for float32 values.
void write_npy_f32(const std::filesystem::path& path, std::span<const std::size_t> shape,
                   std::span<const float> values);

// The elements as float32; F16 is converted. Throws vkf::Error for integer dtypes.
std::vector<float> npy_as_float32(const NpyArray& array);

}  // namespace vkf
