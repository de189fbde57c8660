#pragma once
// What a model loader reads tensors from: one file of named tensors, each a dtype, a shape and
// bytes in C order read by offset. A safetensors file (host/io/safetensors.hpp) is one; a
// llama.cpp GGUF file presented under a family's Hugging Face names (host/quant/
// gguf_tensor_file.hpp) is another, so the loader (ShardedCheckpoint, host/model/weights.hpp)
// reads both in place, a bounded chunk at a time, without converting either to the other.

#include "host/util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

struct TensorInfo {
    std::string name;  // as the loader names it (a safetensors file: as stored)
    DType dtype;
    std::vector<std::size_t> shape;  // empty for a scalar
    std::uint64_t data_begin = 0;    // byte offsets within the data section
    std::uint64_t data_end = 0;

    std::size_t element_count() const;
    std::size_t byte_size() const { return static_cast<std::size_t>(data_end - data_begin); }
};

class TensorFile {
public:
    virtual ~TensorFile() = default;

    virtual const std::filesystem::path& path() const = 0;
    virtual std::uint64_t file_size() const = 0;
    // "safetensors file '<path>'", "GGUF file '<path>'": for messages.
    virtual std::string label() const = 0;
    // Every tensor, in data order.
    virtual std::span<const TensorInfo> tensors() const = 0;
    // String pairs describing the file ("format": "pt", vkformer.quantization, ...).
    virtual const std::map<std::string, std::string>& metadata() const = 0;
    // Exact name lookup; nullptr when absent.
    virtual const TensorInfo* find(std::string_view name) const = 0;
    // Bytes [offset, offset + out.size()) of the tensor as its dtype and shape say (little-endian,
    // C order). Throws vkf::Error naming the file and the tensor for a range beyond the tensor
    // or a file truncated since it was opened.
    virtual void read_raw_into(const TensorInfo& info, std::uint64_t offset, std::span<std::byte> out) const = 0;

    // The whole tensor, through read_raw_into.
    std::vector<std::byte> read_raw(const TensorInfo& info) const;
    // The tensor as float32; F16 and BF16 are converted. Throws vkf::Error naming the file,
    // the tensor and its dtype for any other dtype.
    std::vector<float> read_as_f32(const TensorInfo& info) const;

protected:
    TensorFile() = default;
    TensorFile(const TensorFile&) = default;
    TensorFile& operator=(const TensorFile&) = default;
    TensorFile(TensorFile&&) = default;
    TensorFile& operator=(TensorFile&&) = default;
};

}  // namespace vkf
