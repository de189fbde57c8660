// GgufFile's lookups and tensor reads (open_gguf, which validates the file, is in gguf.cpp).

#include "host/io/gguf.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace vkf {

const GgufValue* GgufFile::find(std::string_view key) const {
    const auto it = key_index_.find(std::string(key));
    return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue& GgufFile::at(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr) {
        throw Error(fmt::format("{}: no metadata key '{}'", label(), key));
    }
    return *value;
}

namespace {
template <class F>
auto typed(const GgufFile& file, std::string_view key, F&& get) {
    try {
        return get(file.at(key));
    } catch (const Error& e) {
        if (file.find(key) == nullptr) {
            throw;
        }
        throw Error(fmt::format("{}: metadata key '{}': {}", file.label(), key, e.what()));
    }
}
}  // namespace

std::string GgufFile::string_at(std::string_view key) const {
    return typed(*this, key, [](const GgufValue& v) { return v.as_string(); });
}

std::uint64_t GgufFile::uint_at(std::string_view key) const {
    return typed(*this, key, [](const GgufValue& v) { return v.as_uint64(); });
}

double GgufFile::float_at(std::string_view key) const {
    return typed(*this, key, [](const GgufValue& v) { return v.as_double(); });
}

const GgufTensorInfo& GgufFile::tensor_at(std::string_view name) const {
    const GgufTensorInfo* info = find_tensor(name);
    if (info == nullptr) {
        throw Error(fmt::format("{}: no tensor '{}'", label(), name));
    }
    return *info;
}

std::vector<std::byte> GgufFile::read_raw(const GgufTensorInfo& info) const {
    std::vector<std::byte> bytes(static_cast<std::size_t>(info.byte_size));
    read_raw_into(info, 0, bytes);
    return bytes;
}

void GgufFile::read_raw_into(const GgufTensorInfo& info, std::uint64_t offset, std::span<std::byte> out) const {
    const std::uint64_t data_bytes = file_size() - data_offset_;
    if (info.offset > data_bytes || info.byte_size > data_bytes - info.offset) {
        throw Error(fmt::format("{}: tensor '{}' lies outside this file's data section", label(), info.name));
    }
    if (offset > info.byte_size || out.size() > info.byte_size - offset) {
        throw Error(fmt::format("{}: tensor '{}': bytes {} to {} lie beyond the tensor's {}", label(), info.name,
                                offset, offset + out.size(), info.byte_size));
    }
    try {
        file_.read_at(data_offset_ + info.offset + offset, out);
    } catch (const Error& e) {
        throw Error(fmt::format("{} (reading tensor '{}')", e.what(), info.name));
    }
}

}  // namespace vkf
