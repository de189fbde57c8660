#pragma once
// Writes tensors as a Hugging Face safetensors checkpoint, in exactly the layout
// transformers writes:
//   model.safetensors                              when shards == 1, or
//   model-0000k-of-0000N.safetensors + model.safetensors.index.json
// Values are produced and written chunk by chunk, so a checkpoint of any size is written
// in bounded memory.

#include "host/util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

// One tensor to write: its name in the file, its shape, and a function filling elements
// [first, first + out.size()) as float32 (rounded to the file's dtype on the way).
struct TensorSource {
    std::string name;
    std::vector<std::size_t> shape;
    std::function<void(std::uint64_t first, std::span<float> out)> values;
};

struct CheckpointWriteProgress {
    std::string_view tensor;       // the tensor being written, as named in the file
    std::size_t tensors_done = 0;  // tensors written completely
    std::size_t tensor_count = 0;
    std::uint64_t bytes_done = 0;  // tensor bytes written so far
    std::uint64_t total_bytes = 0;
};
using CheckpointProgressCallback = std::function<void(const CheckpointWriteProgress&)>;

// Writes `tensors` in order into `dir` (created when needed). dtype must be F32, F16 or
// BF16; shards must be between 1 and the number of tensors (contiguous runs of tensors of
// about equal bytes). A model.safetensors or index left in `dir` by an earlier run with the
// other layout is removed, so that open_checkpoint cannot pick up a stale model. Throws
// vkf::Error naming the file on any failure. `progress`, when given, is called after each
// tensor and, inside tensors of more than 2^20 elements, after each 2^20 elements.
void write_safetensors_checkpoint(const std::filesystem::path& dir, std::span<const TensorSource> tensors, DType dtype,
                                  int shards = 1, const CheckpointProgressCallback& progress = {});

// One tensor stored as it is: its name, dtype (any, e.g. U8 for packed quantized values),
// shape, and a function filling all of its little-endian bytes (element_size(dtype) x the
// shape's product).
struct RawTensorSource {
    std::string name;
    DType dtype = DType::U8;
    std::vector<std::size_t> shape;
    std::function<void(std::span<std::byte> out)> bytes;
};

// Writes `tensors` in order into one safetensors file with `metadata` as its "__metadata__"
// ("format": "pt" is added unless given). Holds one tensor's bytes at a time. Throws
// vkf::Error naming the file on any failure; `progress` is called after each tensor.
void write_safetensors_file(const std::filesystem::path& path, std::span<const RawTensorSource> tensors,
                            const std::map<std::string, std::string>& metadata,
                            const CheckpointProgressCallback& progress = {});

// The text of a file, written whole; throws vkf::Error naming the file.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace vkf
