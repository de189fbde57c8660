#include "host/io/safetensors.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/json.hpp"
#include "host/io/npy.hpp"
#include "host/util/endian.hpp"
#include "host/util/half.hpp"

namespace vkf {
namespace {

std::string file_label(const std::filesystem::path& path) {
    return "safetensors file '" + path.string() + "'";
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& problem) {
    throw Error(file_label(path) + ": " + problem);
}

[[noreturn]] void fail_tensor(const std::filesystem::path& path, std::string_view tensor, const std::string& problem) {
    throw Error(file_label(path) + ": tensor '" + std::string(tensor) + "': " + problem);
}

// Product of the dimensions times the element size, or nullopt on overflow.
std::optional<std::uint64_t> checked_byte_size(std::span<const std::size_t> shape, std::size_t element_bytes) {
    if (std::find(shape.begin(), shape.end(), std::size_t{0}) != shape.end()) {
        return 0;  // [2^63, 2, 0] holds nothing, whatever the other dimensions
    }
    std::uint64_t bytes = element_bytes;
    for (std::size_t dim : shape) {
        if (dim != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / dim) {
            return std::nullopt;
        }
        bytes *= dim;
    }
    return bytes;
}

// Reads one header entry, {"dtype": ..., "shape": [...], "data_offsets": [begin, end]},
// checking everything that concerns the entry alone.
TensorInfo parse_entry(const std::filesystem::path& path, const JsonMember& member, std::uint64_t data_size) {
    const std::string& name = member.key;
    const JsonValue& entry = member.value;
    if (!entry.is_object()) {
        fail_tensor(
            path, name,
            "expected an object with dtype, shape and data_offsets, got " + std::string(json_kind_name(entry.kind())));
    }
    const auto field = [&](std::string_view key) -> const JsonValue& {
        const JsonValue* value = entry.find(key);
        if (value == nullptr) {
            fail_tensor(path, name, "missing field '" + std::string(key) + "'");
        }
        return *value;
    };

    const std::string& dtype_text = field("dtype").as_string();
    const std::optional<DType> dtype = dtype_from_name(dtype_text);
    if (!dtype) {
        fail_tensor(path, name, "unknown dtype '" + dtype_text + "'");
    }

    std::vector<std::size_t> shape;
    for (const JsonValue& dim : field("shape").as_array()) {
        shape.push_back(dim.as_integer<std::size_t>());
    }

    const JsonValue& offsets = field("data_offsets");
    if (offsets.as_array().size() != 2) {
        fail_tensor(
            path, name,
            "data_offsets must be [begin, end], got an array of " + fmt::to_string(offsets.size()) + " elements");
    }
    const std::uint64_t begin = offsets.at(std::size_t{0}).as_uint64();
    const std::uint64_t end = offsets.at(std::size_t{1}).as_uint64();
    const std::string offsets_text = "data_offsets [" + fmt::to_string(begin) + ", " + fmt::to_string(end) + "]";
    if (end < begin) {
        fail_tensor(path, name, offsets_text + " end before they begin");
    }
    if (end > data_size) {
        fail_tensor(
            path, name,
            offsets_text + " extend beyond the data section, which has " + fmt::to_string(data_size) + " bytes");
    }
    const std::optional<std::uint64_t> expected = checked_byte_size(shape, element_size(*dtype));
    if (!expected || *expected != end - begin) {
        fail_tensor(path, name,
                    offsets_text + " hold " + fmt::to_string(end - begin) + " bytes but shape " + shape_text(shape) +
                        " of " + dtype_text + " needs " +
                        (expected ? fmt::to_string(*expected) : std::string("more than 2^64")));
    }
    return TensorInfo{.name = name, .dtype = *dtype, .shape = std::move(shape), .data_begin = begin, .data_end = end};
}

// The format requires the tensors to tile the data section exactly: no overlaps (two
// tensors sharing bytes) and no holes (bytes that belong to no tensor, where a file could
// smuggle other content).
void check_tiling(const std::filesystem::path& path, std::vector<TensorInfo>& tensors, std::uint64_t data_size) {
    std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return std::pair(a.data_begin, a.data_end) < std::pair(b.data_begin, b.data_end);
    });
    std::uint64_t covered = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo& tensor : tensors) {
        if (tensor.data_begin < covered) {
            fail_tensor(path, tensor.name,
                        "data_offsets [" + fmt::to_string(tensor.data_begin) + ", " + fmt::to_string(tensor.data_end) +
                            "] overlap tensor '" + previous->name + "' at [" + fmt::to_string(previous->data_begin) +
                            ", " + fmt::to_string(previous->data_end) + "]");
        }
        if (tensor.data_begin > covered) {
            fail_tensor(path, tensor.name,
                        "data section bytes [" + fmt::to_string(covered) + ", " + fmt::to_string(tensor.data_begin) +
                            ") before this tensor belong to no tensor (the format allows no holes)");
        }
        covered = tensor.data_end;
        previous = &tensor;
    }
    if (covered != data_size) {
        fail(path, "data section bytes [" + fmt::to_string(covered) + ", " + fmt::to_string(data_size) +
                       ") after the last tensor belong to no tensor (the format allows no holes)");
    }
}

}  // namespace

SafetensorsFile::SafetensorsFile(ReadableFile file) : file_(std::move(file)) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

std::uint64_t SafetensorsFile::file_size() const {
    return file_.size();
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    const auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafetensorsFile::tensor_info(std::string_view name) const {
    const TensorInfo* info = find(name);
    if (info == nullptr) {
        fail_tensor(path(), name, "no such tensor in the file");
    }
    return *info;
}

std::vector<std::byte> SafetensorsFile::read_raw(std::string_view name) const {
    return read_raw(tensor_info(name));
}

std::string SafetensorsFile::label() const {
    return file_label(path());
}

void SafetensorsFile::read_raw_into(const TensorInfo& info, std::uint64_t offset, std::span<std::byte> out) const {
    // Guards against a TensorInfo taken from another file, and ranges beyond the tensor.
    if (info.data_end < info.data_begin || info.data_end > file_.size() - data_start_) {
        fail_tensor(path(), info.name, "data_offsets lie outside this file's data section");
    }
    if (offset > info.byte_size() || out.size() > info.byte_size() - offset) {
        fail_tensor(path(), info.name,
                    "bytes " + fmt::to_string(offset) + " to " + fmt::to_string(offset + out.size()) +
                        " lie beyond the tensor's " + fmt::to_string(info.byte_size()));
    }
    try {
        file_.read_at(data_start_ + info.data_begin + offset, out);
    } catch (const Error& e) {
        throw Error(std::string(e.what()) + " (reading tensor '" + info.name + "')");
    }
}

std::vector<float> SafetensorsFile::read_as_f32(std::string_view name) const {
    return read_as_f32(tensor_info(name));
}

SafetensorsFile open_safetensors(const std::filesystem::path& path) {
    ReadableFile source(path, "safetensors file");
    const std::uint64_t file_size = source.size();
    if (file_size < 8) {
        fail(path, "the file has only " + fmt::to_string(file_size) +
                       " bytes; a safetensors file starts with an 8-byte header length");
    }
    std::byte length[8];
    source.read_at(0, length);
    const std::uint64_t header_size = load_le<std::uint64_t>(length);
    if (header_size > kSafetensorsMaxHeaderBytes) {
        fail(path, "header length " + fmt::to_string(header_size) + " is absurdly large (the limit is " +
                       fmt::to_string(kSafetensorsMaxHeaderBytes) + " bytes)");
    }
    if (header_size > file_size - 8) {
        fail(path, "header length " + fmt::to_string(header_size) + " extends beyond the end of the file (" +
                       fmt::to_string(file_size) + " bytes)");
    }
    std::string header_bytes(static_cast<std::size_t>(header_size), '\0');
    source.read_at(8, std::as_writable_bytes(std::span<char>(header_bytes)));
    const JsonValue header = parse_json(header_bytes, file_label(path) + ": header");
    if (!header.is_object()) {
        fail(path, "the header must be a JSON object, got " + std::string(json_kind_name(header.kind())));
    }

    const std::uint64_t data_start = 8 + header_size;
    const std::uint64_t data_size = file_size - data_start;
    std::vector<TensorInfo> tensors;
    std::map<std::string, std::string> metadata;
    for (const JsonMember& member : header.as_object()) {
        if (member.key == "__metadata__") {
            // String pairs ("format": "pt"; vkformer's quantized checkpoints name their format here).
            if (!member.value.is_object()) {
                fail(path, "__metadata__ must be an object, got " + std::string(json_kind_name(member.value.kind())));
            }
            for (const JsonMember& entry : member.value.as_object()) {
                if (!entry.value.is_string()) {
                    fail(path, "__metadata__ entry '" + entry.key + "' must be a string, got " +
                                   std::string(json_kind_name(entry.value.kind())));
                }
                metadata[entry.key] = entry.value.as_string();
            }
            continue;
        }
        tensors.push_back(parse_entry(path, member, data_size));
    }
    check_tiling(path, tensors, data_size);

    SafetensorsFile file(std::move(source));
    file.data_start_ = data_start;
    file.tensors_ = std::move(tensors);
    file.metadata_ = std::move(metadata);
    for (std::size_t i = 0; i < file.tensors_.size(); ++i) {
        file.index_.emplace(file.tensors_[i].name, i);
    }
    return file;
}

std::vector<std::string> ShardedCheckpoint::tensor_names() const {
    std::vector<std::string> names;
    names.reserve(tensors_.size());
    for (const auto& [name, tensor] : tensors_) {
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

const CheckpointTensor* ShardedCheckpoint::find(std::string_view name) const {
    auto it = tensors_.find(std::string(name));
    if (it == tensors_.end()) {
        const std::string other = name.starts_with(kTransformerPrefix)
                                      ? std::string(name.substr(kTransformerPrefix.size()))
                                      : std::string(kTransformerPrefix) + std::string(name);
        it = tensors_.find(other);
    }
    return it == tensors_.end() ? nullptr : &it->second;
}

const CheckpointTensor& ShardedCheckpoint::at(std::string_view name) const {
    const CheckpointTensor* tensor = find(name);
    if (tensor == nullptr) {
        const std::string other = name.starts_with(kTransformerPrefix)
                                      ? std::string(name.substr(kTransformerPrefix.size()))
                                      : std::string(kTransformerPrefix) + std::string(name);
        throw Error("checkpoint '" + source_.string() + "': no tensor '" + std::string(name) + "' (nor '" + other +
                    "')");
    }
    return *tensor;
}

std::vector<std::byte> ShardedCheckpoint::read_raw(std::string_view name) const {
    const CheckpointTensor& tensor = at(name);
    return tensor.file->read_raw(*tensor.info);
}

std::vector<float> ShardedCheckpoint::read_as_f32(std::string_view name) const {
    const CheckpointTensor& tensor = at(name);
    return tensor.file->read_as_f32(*tensor.info);
}

ShardedCheckpoint ShardedCheckpoint::of_file(std::filesystem::path source, std::unique_ptr<TensorFile> file) {
    ShardedCheckpoint checkpoint;
    checkpoint.source_ = std::move(source);
    for (const TensorInfo& info : file->tensors()) {
        checkpoint.tensors_.emplace(info.name, CheckpointTensor{.file = file.get(), .info = &info});
    }
    checkpoint.files_.push_back(std::move(file));
    return checkpoint;
}

namespace {

constexpr std::string_view kSingleFileName = "model.safetensors";
constexpr std::string_view kIndexFileName = "model.safetensors.index.json";

// Shard names in an index are file names relative to the index's directory; anything
// that could leave that directory is refused.
bool is_safe_relative_path(const std::string& name) {
    const std::filesystem::path relative(name);
    if (name.empty() || relative.is_absolute() || relative.has_root_name()) {
        return false;
    }
    for (const std::filesystem::path& part : relative) {
        if (part == "..") {
            return false;
        }
    }
    return true;
}

// The lexical check above cannot see symbolic links: a shard "escape/model.safetensors"
// where "escape" links to a directory elsewhere would leave the checkpoint. The directory a
// shard resolves to must lie inside the checkpoint's. The shard file itself may be a link:
// the Hugging Face cache stores every file of a snapshot as a link to its blob store.
void check_shard_directory(const std::string& index_label, const std::string& tensor,
                           const std::filesystem::path& checkpoint_dir, const std::filesystem::path& shard_path) {
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::path base = fs::canonical(checkpoint_dir.empty() ? fs::path(".") : checkpoint_dir, error);
    const fs::path parent = error ? fs::path() : fs::canonical(shard_path.parent_path(), error);
    if (error) {
        throw Error(index_label + ": tensor '" + tensor + "': cannot resolve the directory of shard '" +
                    shard_path.string() + "': " + error.message());
    }
    if (std::mismatch(base.begin(), base.end(), parent.begin(), parent.end()).first != base.end()) {
        throw Error(index_label + ": tensor '" + tensor + "': shard '" + shard_path.string() + "' lies in '" +
                    parent.string() + "', outside the checkpoint directory '" + base.string() +
                    "' (through a symbolic link)");
    }
}

// Whether `path` names something. A name that is there but cannot be followed (a loop of
// symbolic links, a link to nothing, a directory it may not search) is an error naming it and
// why: taken for absent, it would be blamed on the wrong thing ("has neither ...").
bool present(const std::filesystem::path& path, std::string_view what) {
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::file_status entry = fs::symlink_status(path, error);
    if (error && error != std::errc::no_such_file_or_directory && error != std::errc::not_a_directory) {
        throw Error(fmt::format("{} '{}' cannot be read: {}", what, path.string(), error.message()));
    }
    if (!fs::exists(entry)) {
        return false;
    }
    const fs::file_status target = fs::status(path, error);
    if (error || !fs::exists(target)) {
        throw Error(fmt::format("{} '{}' cannot be read: {}{}", what, path.string(),
                                error ? error.message() : "No such file or directory",
                                fs::is_symlink(entry) ? " (a symbolic link)" : ""));
    }
    return true;
}

}  // namespace

ShardedCheckpoint open_checkpoint(const std::filesystem::path& path) {
    namespace fs = std::filesystem;
    std::error_code ignored;
    fs::path single_file, index_file;
    if (!present(path, "checkpoint")) {
        throw Error("checkpoint '" + path.string() + "' does not exist");
    } else if (fs::is_directory(path, ignored)) {
        if (present(path / kSingleFileName, "checkpoint file")) {
            single_file = path / kSingleFileName;
        } else if (present(path / kIndexFileName, "checkpoint index")) {
            index_file = path / kIndexFileName;
        } else {
            throw Error("checkpoint directory '" + path.string() + "' has neither " + std::string(kSingleFileName) +
                        " nor " + std::string(kIndexFileName));
        }
    } else if (path.extension() == ".json") {
        index_file = path;
    } else {
        single_file = path;
    }

    ShardedCheckpoint checkpoint;
    checkpoint.source_ = path;
    if (!single_file.empty()) {
        return ShardedCheckpoint::of_file(path, std::make_unique<SafetensorsFile>(open_safetensors(single_file)));
    }

    const JsonValue index = read_json_file(index_file);
    const JsonValue& weight_map = index.at("weight_map");
    const std::string index_label = "index '" + index_file.string() + "'";
    std::map<std::string, SafetensorsFile*> shards;
    for (const JsonMember& member : weight_map.as_object()) {
        const std::string& shard_name = member.value.as_string();
        if (!is_safe_relative_path(shard_name)) {
            throw Error(index_label + ": tensor '" + member.key + "': shard '" + shard_name +
                        "' is not a relative path inside the checkpoint directory");
        }
        SafetensorsFile*& shard = shards[shard_name];
        if (shard == nullptr) {
            const fs::path shard_path = index_file.parent_path() / shard_name;
            if (!present(shard_path, fmt::format("{}: tensor '{}': shard file", index_label, member.key))) {
                throw Error(index_label + ": tensor '" + member.key + "': shard file '" + shard_path.string() +
                            "' does not exist");
            }
            check_shard_directory(index_label, member.key, index_file.parent_path(), shard_path);
            auto opened = std::make_unique<SafetensorsFile>(open_safetensors(shard_path));
            shard = opened.get();
            checkpoint.files_.push_back(std::move(opened));
        }
        const TensorInfo* info = shard->find(member.key);
        if (info == nullptr) {
            throw Error(index_label + " maps tensor '" + member.key + "' to " + file_label(shard->path()) +
                        ", which has no tensor of that name");
        }
        checkpoint.tensors_.emplace(member.key, CheckpointTensor{.file = shard, .info = info});
    }
    return checkpoint;
}

}  // namespace vkf
