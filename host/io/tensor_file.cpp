#include "host/io/tensor_file.hpp"

#include "base/error.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>

namespace vkf {

std::size_t TensorInfo::element_count() const {
    std::size_t count = 1;
    for (const std::size_t d : shape) {
        count *= d;
    }
    return count;
}

std::vector<std::byte> TensorFile::read_raw(const TensorInfo& info) const {
    std::vector<std::byte> bytes(info.byte_size());
    read_raw_into(info, 0, bytes);
    return bytes;
}

std::vector<float> TensorFile::read_as_f32(const TensorInfo& info) const {
    if (!is_supported_float(info.dtype)) {
        throw Error(
            fmt::format("{}: tensor '{}': dtype {} cannot be read as floats (vkformer reads F32, F16 and "
                        "BF16 tensors)",
                        label(), info.name, dtype_name(info.dtype)));
    }
    const std::vector<std::byte> raw = read_raw(info);
    std::vector<float> values(raw.size() / element_size(info.dtype));
    convert_to_f32(info.dtype, raw, values);
    return values;
}

}  // namespace vkf
