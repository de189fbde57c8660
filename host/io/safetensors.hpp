#pragma once
// Hugging Face safetensors checkpoints: single files and sharded checkpoints with a
// model.safetensors.index.json.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of JSON
// ({"__metadata__": {...}, "name": {"dtype": "F16", "shape": [..], "data_offsets":
// [begin, end]}, ...}), then the data section, which the tensors must cover exactly,
// back to back. Opening a file reads only its header; tensor bytes are read by offset when
// asked for (whole, or a range at a time), so multi-gigabyte checkpoints cost no memory up
// front. Files are read with pread, never memory-mapped: a mapped checkpoint that another
// process truncates during a load would kill the process with SIGBUS, where a short read
// becomes an error naming the file.
//
// Checkpoints come from anywhere, so open_safetensors validates the whole header before
// returning and refuses, naming the file and the tensor, anything malformed: a header
// length beyond the file or absurdly large, a header that is not JSON or lacks fields, an
// unknown dtype, offsets outside the data section or with end < begin, a byte size that
// does not match shape x dtype, tensors that overlap or leave holes, repeated names.

#include "base/files.hpp"
#include "host/io/tensor_file.hpp"
#include "host/util/dtype.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vkf {

// One open safetensors file. Move-only.
class SafetensorsFile final : public TensorFile {
public:
    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    ~SafetensorsFile();

    const std::filesystem::path& path() const override { return file_.path(); }
    std::uint64_t file_size() const override;
    std::string label() const override;
    // Tensors in data-section order.
    std::span<const TensorInfo> tensors() const override { return tensors_; }

    // The header's "__metadata__" (string keys and string values, as the format says;
    // e.g. "format": "pt"); empty when the header has none.
    const std::map<std::string, std::string>& metadata() const override { return metadata_; }

    // Exact name lookup; nullptr when absent.
    const TensorInfo* find(std::string_view name) const override;
    // As find, but throws vkf::Error naming the file and the tensor when absent.
    const TensorInfo& tensor_info(std::string_view name) const;

    // The tensor's bytes (little-endian, C order, any dtype). Throws vkf::Error naming the
    // file and the tensor when the file was truncated since it was opened.
    using TensorFile::read_as_f32;
    using TensorFile::read_raw;
    std::vector<std::byte> read_raw(std::string_view name) const;
    // Bytes [offset, offset + out.size()) of the tensor, for reading large tensors a chunk at
    // a time.
    void read_raw_into(const TensorInfo& info, std::uint64_t offset, std::span<std::byte> out) const override;
    // The tensor as float32 (TensorFile::read_as_f32).
    std::vector<float> read_as_f32(std::string_view name) const;

private:
    friend SafetensorsFile open_safetensors(const std::filesystem::path& path);
    explicit SafetensorsFile(ReadableFile file);

    ReadableFile file_;
    std::uint64_t data_start_ = 0;  // file offset of the data section
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, std::size_t> index_;  // name -> position in tensors_
    std::map<std::string, std::string> metadata_;
};

// Headers beyond this are refused as absurd (the limit the reference implementation uses).
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// Maps the file and validates its header; throws vkf::Error as described at the top.
SafetensorsFile open_safetensors(const std::filesystem::path& path);

// A tensor of a checkpoint and the file that holds it.
struct CheckpointTensor {
    const TensorFile* file;
    const TensorInfo* info;
};

// A model's weights, in one model.safetensors or spread over shards listed by
// model.safetensors.index.json ({"weight_map": {"tensor": "shard file"}}), behind one
// API. Names are looked up as given and then with the "transformer." prefix added or
// removed, because checkpoints of the same model come both ways (BLOOM's
// "transformer.h.0..." and "h.0...").
class ShardedCheckpoint {
public:
    // The directory, or the file, it was opened from.
    const std::filesystem::path& source() const { return source_; }
    std::span<const std::unique_ptr<TensorFile>> files() const { return files_; }
    // Tensor names as stored in the checkpoint, sorted.
    std::vector<std::string> tensor_names() const;

    // nullptr when the name is absent under both spellings.
    const CheckpointTensor* find(std::string_view name) const;
    // The following throw vkf::Error naming the checkpoint and the tensor when absent.
    const CheckpointTensor& at(std::string_view name) const;
    const TensorInfo& tensor_info(std::string_view name) const { return *at(name).info; }
    const std::filesystem::path& file_of(std::string_view name) const { return at(name).file->path(); }
    std::vector<std::byte> read_raw(std::string_view name) const;
    std::vector<float> read_as_f32(std::string_view name) const;

    // A checkpoint of one file of any kind (a GGUF file's tensors, host/quant/gguf_tensor_file.hpp).
    static ShardedCheckpoint of_file(std::filesystem::path source, std::unique_ptr<TensorFile> file);

private:
    friend ShardedCheckpoint open_checkpoint(const std::filesystem::path& path);

    std::filesystem::path source_;
    std::vector<std::unique_ptr<TensorFile>> files_;
    std::unordered_map<std::string, CheckpointTensor> tensors_;
};

inline constexpr std::string_view kTransformerPrefix = "transformer.";

// Opens a checkpoint from a directory holding model.safetensors (preferred, as Hugging
// Face does) or model.safetensors.index.json, or from a path to either kind of file.
// Every shard is opened and validated, and every tensor the index names must be in its
// shard: a missing one is an error naming the tensor, the index and the shard.
ShardedCheckpoint open_checkpoint(const std::filesystem::path& path);

}  // namespace vkf
