#include "host/io/safetensors_writer.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/format.hpp"
#include "host/util/endian.hpp"
#include "host/util/half.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <limits>
#include <map>

namespace vkf {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSingleFileName = "model.safetensors";
constexpr std::string_view kIndexFileName = "model.safetensors.index.json";
// Elements produced and written per step: bounds the memory a tensor of any size needs.
constexpr std::size_t kChunkElements = std::size_t{1} << 20;
// safetensors pads its header with spaces so that the data section starts 8-aligned.
constexpr std::size_t kHeaderAlignment = 8;

// Bytes of a tensor to write; throws when the shape's size does not fit 64 bits.
std::uint64_t checked_tensor_bytes(const std::string& name, std::span<const std::size_t> shape, std::size_t element) {
    std::uint64_t bytes = element;
    for (const std::size_t dim : shape) {
        if (dim != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / dim) {
            throw Error(fmt::format("checkpoint writer: tensor '{}' of shape {} needs more than 2^64 bytes", name,
                                    shape_text(shape)));
        }
        bytes *= dim;
    }
    return bytes;
}

struct PlannedTensor {
    const TensorSource* source;
    std::uint64_t bytes = 0;
    int shard = 0;
};

// Contiguous runs of tensors, cut where the running total passes each 1/shards of the
// bytes, with at least one tensor per shard.
void assign_shards(std::vector<PlannedTensor>& tensors, int shards) {
    std::uint64_t total = 0;
    for (const PlannedTensor& tensor : tensors) {
        total += tensor.bytes;
    }
    int shard = 0;
    std::uint64_t written = 0;
    std::size_t in_shard = 0;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        const bool must_advance = in_shard > 0 && tensors.size() - t == static_cast<std::size_t>(shards - 1 - shard);
        const bool want_advance =
            in_shard > 0 && shard < shards - 1 &&
            written >= total / static_cast<std::uint64_t>(shards) * static_cast<std::uint64_t>(shard + 1);
        if (must_advance || want_advance) {
            ++shard;
            in_shard = 0;
        }
        tensors[t].shard = shard;
        written += tensors[t].bytes;
        ++in_shard;
    }
}

std::string shard_file_name(int shard, int shards) {
    return fmt::format("model-{:05d}-of-{:05d}.safetensors", shard + 1, shards);
}

// The safetensors header of one file: {"__metadata__": {"format": "pt"}, name: {...}, ...},
// padded with spaces to a multiple of 8 bytes.
std::string safetensors_header(std::span<const PlannedTensor* const> tensors, DType dtype) {
    nlohmann::ordered_json header = {{"__metadata__", {{"format", "pt"}}}};
    std::uint64_t offset = 0;
    for (const PlannedTensor* tensor : tensors) {
        header[tensor->source->name] = {{"dtype", dtype_name(dtype)},
                                        {"shape", tensor->source->shape},
                                        {"data_offsets", {offset, offset + tensor->bytes}}};
        offset += tensor->bytes;
    }
    std::string text = header.dump();
    text.append((kHeaderAlignment - text.size() % kHeaderAlignment) % kHeaderAlignment, ' ');
    return text;
}

// Produces the tensor's values chunk by chunk, converts them to `dtype` and writes them;
// after_chunk(bytes) follows every chunk.
template <class AfterChunk>
void write_tensor_data(AtomicFile& out, const PlannedTensor& tensor, DType dtype, AfterChunk&& after_chunk) {
    const std::size_t size = element_size(dtype);
    const std::uint64_t count = tensor.bytes / size;
    const auto capacity = static_cast<std::size_t>(std::min<std::uint64_t>(count, kChunkElements));
    std::vector<float> values(capacity);
    std::vector<std::uint16_t> halves(size == 2 ? capacity : 0);
    std::vector<std::byte> bytes(capacity * size);
    for (std::uint64_t first = 0; first < count; first += kChunkElements) {
        const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(kChunkElements, count - first));
        const std::span<float> chunk_values(values.data(), chunk);
        tensor.source->values(first, chunk_values);
        if (dtype == DType::F32) {
            for (std::size_t i = 0; i < chunk; ++i) {
                store_le(bytes.data() + 4 * i, std::bit_cast<std::uint32_t>(chunk_values[i]));
            }
        } else {
            const std::span<std::uint16_t> chunk_halves(halves.data(), chunk);
            if (dtype == DType::F16) {
                floats_to_halves(chunk_values, chunk_halves);
            } else {
                floats_to_bfloat16s(chunk_values, chunk_halves);
            }
            for (std::size_t i = 0; i < chunk; ++i) {
                store_le(bytes.data() + 2 * i, chunk_halves[i]);
            }
        }
        out.write(std::span<const std::byte>(bytes.data(), chunk * size));
        after_chunk(chunk * size);
    }
}

std::string index_json(std::span<const PlannedTensor> tensors, int shards) {
    std::uint64_t total = 0;
    std::map<std::string, std::string> weight_map;  // sorted by name, as transformers writes it
    for (const PlannedTensor& tensor : tensors) {
        total += tensor.bytes;
        weight_map.emplace(tensor.source->name, shard_file_name(tensor.shard, shards));
    }
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    return index.dump(2) + "\n";
}

}  // namespace

void write_text_file(const fs::path& path, const std::string& text) {
    write_file_atomically(path, text, "checkpoint file");
}

void write_safetensors_file(const fs::path& path, std::span<const RawTensorSource> tensors,
                            const std::map<std::string, std::string>& metadata,
                            const CheckpointProgressCallback& progress) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    meta["format"] = "pt";
    for (const auto& [key, value] : metadata) {
        meta[key] = value;
    }
    nlohmann::ordered_json header = {{"__metadata__", meta}};
    std::vector<std::uint64_t> sizes;
    std::uint64_t offset = 0;
    for (const RawTensorSource& tensor : tensors) {
        const std::uint64_t bytes = checked_tensor_bytes(tensor.name, tensor.shape, element_size(tensor.dtype));
        header[tensor.name] = {
            {"dtype", dtype_name(tensor.dtype)}, {"shape", tensor.shape}, {"data_offsets", {offset, offset + bytes}}};
        sizes.push_back(bytes);
        offset += bytes;
    }
    std::string text = header.dump();
    text.append((kHeaderAlignment - text.size() % kHeaderAlignment) % kHeaderAlignment, ' ');

    check_free_space(path.parent_path(), 8 + text.size() + offset, "safetensors file '" + path.string() + "'");
    AtomicFile out(path, "safetensors file");
    std::byte length[8];
    store_le(length, static_cast<std::uint64_t>(text.size()));
    out.write(length);
    out.write(text);
    std::vector<std::byte> bytes;
    std::uint64_t done = 0;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        bytes.assign(sizes[t], std::byte{0});
        tensors[t].bytes(bytes);
        out.write(bytes);
        done += sizes[t];
        if (progress) {
            progress(CheckpointWriteProgress{.tensor = tensors[t].name,
                                             .tensors_done = t + 1,
                                             .tensor_count = tensors.size(),
                                             .bytes_done = done,
                                             .total_bytes = offset});
        }
    }
    out.commit();
}

void write_safetensors_checkpoint(const fs::path& dir, std::span<const TensorSource> sources, DType dtype, int shards,
                                  const CheckpointProgressCallback& progress) {
    if (!is_supported_float(dtype)) {
        throw Error(fmt::format("checkpoint writer: dtype {} is not one of F32, F16, BF16", dtype_name(dtype)));
    }
    std::vector<PlannedTensor> tensors;
    for (const TensorSource& source : sources) {
        const std::uint64_t bytes = checked_tensor_bytes(source.name, source.shape, element_size(dtype));
        tensors.push_back(PlannedTensor{.source = &source, .bytes = bytes});
    }
    if (shards < 1 || static_cast<std::size_t>(shards) > tensors.size()) {
        throw Error(
            fmt::format("checkpoint writer: {} shards requested; between 1 and {} (the number of tensors) "
                        "are possible",
                        shards, tensors.size()));
    }
    assign_shards(tensors, shards);

    std::error_code error;
    fs::create_directories(dir, error);
    if (error) {
        throw Error("checkpoint writer: cannot create directory '" + dir.string() + "': " + error.message());
    }
    fs::remove(dir / (shards == 1 ? kIndexFileName : kSingleFileName), error);

    std::uint64_t total_bytes = 0;
    for (const PlannedTensor& tensor : tensors) {
        total_bytes += tensor.bytes;
    }
    check_free_space(dir, total_bytes, "checkpoint '" + dir.string() + "'");
    // Shards written by this call are removed again when a later one fails: a checkpoint
    // is complete or absent.
    std::vector<fs::path> written;
    struct RemoveOnFailure {
        std::vector<fs::path>& paths;
        bool done = false;
        ~RemoveOnFailure() {
            if (!done) {
                std::error_code ignored;
                for (const fs::path& p : paths) {
                    fs::remove(p, ignored);
                }
            }
        }
    } cleanup{written};
    std::uint64_t bytes_done = 0;
    std::size_t tensors_done = 0;
    for (int shard = 0; shard < shards; ++shard) {
        std::vector<const PlannedTensor*> members;
        for (const PlannedTensor& tensor : tensors) {
            if (tensor.shard == shard) {
                members.push_back(&tensor);
            }
        }
        const fs::path path = dir / (shards == 1 ? std::string(kSingleFileName) : shard_file_name(shard, shards));
        const std::string header = safetensors_header(members, dtype);
        AtomicFile out(path, "safetensors file");
        std::byte length[8];
        store_le(length, static_cast<std::uint64_t>(header.size()));
        out.write(length);
        out.write(header);
        for (const PlannedTensor* tensor : members) {
            const auto report = [&] {
                if (progress) {
                    progress(CheckpointWriteProgress{.tensor = tensor->source->name,
                                                     .tensors_done = tensors_done,
                                                     .tensor_count = tensors.size(),
                                                     .bytes_done = bytes_done,
                                                     .total_bytes = total_bytes});
                }
            };
            const std::uint64_t tensor_end = bytes_done + tensor->bytes;
            write_tensor_data(out, *tensor, dtype, [&](std::uint64_t chunk_bytes) {
                bytes_done += chunk_bytes;
                if (bytes_done < tensor_end) {
                    report();  // inside a large tensor
                }
            });
            ++tensors_done;
            report();
        }
        out.commit();
        written.push_back(path);
    }
    if (shards > 1) {
        write_text_file(dir / kIndexFileName, index_json(tensors, shards));
    }
    cleanup.done = true;
}

}  // namespace vkf
