#include "host/io/gguf_writer.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "host/io/gguf_keys.hpp"
#include "host/util/endian.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <set>
#include <type_traits>

namespace vkf {
namespace {

// The header, key/values and tensor infos, serialized little-endian as gguf.md lays them out.
class HeaderBytes {
public:
    template <class T>
    void put(T value) {
        std::byte bytes[sizeof(T)];
        store_le(bytes, static_cast<std::make_unsigned_t<T>>(value));
        out_.append(reinterpret_cast<const char*>(bytes), sizeof(T));
    }
    void put_bytes(std::string_view bytes) { out_.append(bytes); }
    void put_string(std::string_view text) {
        put<std::uint64_t>(text.size());
        out_.append(text);
    }
    void put_value(const GgufValue& value, GgufValueType type) {
        switch (type) {
            case GgufValueType::U8:
                put(static_cast<std::uint8_t>(value.as_uint64()));
                break;
            case GgufValueType::I8:
                put(static_cast<std::int8_t>(value.as_int64()));
                break;
            case GgufValueType::U16:
                put(static_cast<std::uint16_t>(value.as_uint64()));
                break;
            case GgufValueType::I16:
                put(static_cast<std::int16_t>(value.as_int64()));
                break;
            case GgufValueType::U32:
                put(static_cast<std::uint32_t>(value.as_uint64()));
                break;
            case GgufValueType::I32:
                put(static_cast<std::int32_t>(value.as_int64()));
                break;
            case GgufValueType::U64:
                put(value.as_uint64());
                break;
            case GgufValueType::I64:
                put(value.as_int64());
                break;
            case GgufValueType::F32:
                put(std::bit_cast<std::uint32_t>(static_cast<float>(value.as_double())));
                break;
            case GgufValueType::F64:
                put(std::bit_cast<std::uint64_t>(value.as_double()));
                break;
            case GgufValueType::Bool:
                put(static_cast<std::uint8_t>(value.as_bool() ? 1 : 0));
                break;
            case GgufValueType::String:
                put_string(value.as_string());
                break;
            case GgufValueType::Array: {
                if (value.element_type == GgufValueType::Array) {
                    throw Error("nested arrays cannot be written (llama.cpp reads none)");
                }
                put(static_cast<std::uint32_t>(value.element_type));
                put<std::uint64_t>(value.as_array().size());
                for (const GgufValue& element : value.as_array()) {
                    put_value(element, value.element_type);
                }
                break;
            }
        }
    }
    void pad_to(std::uint64_t alignment) { out_.append((alignment - out_.size() % alignment) % alignment, '\0'); }
    const std::string& text() const { return out_; }

private:
    std::string out_;
};

std::uint64_t alignment_of(std::span<const GgufKeyValue> metadata) {
    for (const GgufKeyValue& kv : metadata) {
        if (kv.key == gguf_key::kAlignment) {
            const std::uint64_t alignment = kv.value.type == GgufValueType::U32 ? kv.value.as_uint64() : 0;
            if (alignment == 0 || !std::has_single_bit(alignment)) {
                throw Error(fmt::format("{} must be a uint32 power of two", gguf_key::kAlignment));
            }
            return alignment;
        }
    }
    return kGgufDefaultAlignment;
}

std::uint64_t padded(std::uint64_t bytes, std::uint64_t alignment) {
    return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

std::uint64_t gguf_tensor_bytes(const GgufTensorSource& tensor) {
    const auto traits = ggml_type_traits(static_cast<std::uint32_t>(tensor.type));
    if (!traits) {
        throw Error(
            fmt::format("tensor '{}': unknown ggml type {}", tensor.name, static_cast<std::uint32_t>(tensor.type)));
    }
    if (tensor.dims.empty() || tensor.dims.size() > kGgufMaxDims) {
        throw Error(fmt::format("tensor '{}': {} dimensions (GGUF holds 1 to {})", tensor.name, tensor.dims.size(),
                                kGgufMaxDims));
    }
    if (tensor.dims[0] % traits->block_size != 0) {
        throw Error(fmt::format("tensor '{}': rows of {} elements cannot be stored as {} (blocks of {})", tensor.name,
                                tensor.dims[0], traits->name, traits->block_size));
    }
    std::uint64_t bytes = tensor.dims[0] / traits->block_size * traits->block_bytes;
    for (std::size_t d = 1; d < tensor.dims.size(); ++d) {
        if (tensor.dims[d] != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / tensor.dims[d]) {
            throw Error(fmt::format("tensor '{}' needs more than 2^64 bytes", tensor.name));
        }
        bytes *= tensor.dims[d];
    }
    return bytes;
}

void write_gguf_file(const std::filesystem::path& path, std::span<const GgufKeyValue> metadata,
                     std::span<const GgufTensorSource> tensors, const CheckpointProgressCallback& progress) {
    const std::string label = fmt::format("GGUF file '{}'", path.string());
    const std::uint64_t alignment = [&] {
        try {
            return alignment_of(metadata);
        } catch (const Error& e) {
            throw Error(fmt::format("{}: {}", label, e.what()));
        }
    }();
    HeaderBytes header;
    header.put_bytes(std::string_view(gguf_key::kMagic.data(), gguf_key::kMagic.size()));
    header.put(gguf_key::kWrittenVersion);
    header.put<std::uint64_t>(tensors.size());
    header.put<std::uint64_t>(metadata.size());
    std::set<std::string_view> keys;
    for (const GgufKeyValue& kv : metadata) {
        if (kv.key.empty() || !keys.insert(kv.key).second) {
            throw Error(fmt::format("{}: metadata key '{}' is empty or given twice", label, kv.key));
        }
        header.put_string(kv.key);
        header.put(static_cast<std::uint32_t>(kv.value.type));
        try {
            header.put_value(kv.value, kv.value.type);
        } catch (const Error& e) {
            throw Error(fmt::format("{}: metadata key '{}': {}", label, kv.key, e.what()));
        }
    }
    std::vector<std::uint64_t> sizes;
    std::set<std::string_view> names;
    std::uint64_t offset = 0;
    for (const GgufTensorSource& tensor : tensors) {
        if (!names.insert(tensor.name).second) {
            throw Error(fmt::format("{}: tensor '{}' given twice", label, tensor.name));
        }
        const std::uint64_t bytes = [&] {
            try {
                return gguf_tensor_bytes(tensor);
            } catch (const Error& e) {
                throw Error(fmt::format("{}: {}", label, e.what()));
            }
        }();
        header.put_string(tensor.name);
        header.put(static_cast<std::uint32_t>(tensor.dims.size()));
        for (const std::uint64_t d : tensor.dims) {
            header.put(d);
        }
        header.put(static_cast<std::uint32_t>(tensor.type));
        header.put(offset);
        sizes.push_back(bytes);
        offset += padded(bytes, alignment);
    }
    header.pad_to(alignment);
    const std::uint64_t total = header.text().size() + offset;
    // A device or FIFO target (/dev/stdout, a pipe) is written as a stream: its directory's free
    // space says nothing about it.
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) || std::filesystem::is_regular_file(path, ec)) {
        check_free_space(path.parent_path(), total, label);
    }

    AtomicFile out(path, "GGUF file");
    out.write(header.text());
    std::vector<std::byte> band;
    std::uint64_t done = 0;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        const GgufTensorSource& tensor = tensors[t];
        std::uint64_t row_count = 1;  // rows of dims[0] elements
        for (std::size_t d = 1; d < tensor.dims.size(); ++d) {
            row_count *= tensor.dims[d];
        }
        row_count = sizes[t] == 0 ? 0 : row_count;
        const std::uint64_t row_bytes = row_count == 0 ? 0 : sizes[t] / row_count;
        const std::uint64_t band_rows =
            std::max<std::uint64_t>(1, kGgufWriteBandBytes / std::max<std::uint64_t>(1, row_bytes));
        // Each tensor is padded to the alignment, the last one too (gguf-py's write_padding).
        const std::uint64_t pad = padded(sizes[t], alignment) - sizes[t];
        const auto report = [&](bool tensor_done) {
            if (progress) {
                progress(CheckpointWriteProgress{.tensor = tensor.name,
                                                 .tensors_done = tensor_done ? t + 1 : t,
                                                 .tensor_count = tensors.size(),
                                                 .bytes_done = done,
                                                 .total_bytes = offset});
            }
        };
        for (std::uint64_t first = 0; first < row_count; first += band_rows) {
            const std::uint64_t n = std::min(band_rows, row_count - first);
            band.assign(n * row_bytes, std::byte{0});
            tensor.fill(first, n, band);
            out.write(band);
            done += band.size();
            if (first + n < row_count) {
                report(false);
            }
        }
        if (pad != 0) {
            band.assign(pad, std::byte{0});
            out.write(band);
            done += pad;
        }
        report(true);
    }
    out.commit();
}

GgufValue gguf_uint32(std::uint32_t value) {
    return GgufValue{.type = GgufValueType::U32, .value = std::uint64_t{value}};
}
GgufValue gguf_int32(std::int32_t value) {
    return GgufValue{.type = GgufValueType::I32, .value = std::int64_t{value}};
}
GgufValue gguf_float32(float value) {
    return GgufValue{.type = GgufValueType::F32, .value = double{value}};
}
GgufValue gguf_bool(bool value) {
    return GgufValue{.type = GgufValueType::Bool, .value = value};
}
GgufValue gguf_string(std::string value) {
    return GgufValue{.type = GgufValueType::String, .value = std::move(value)};
}
GgufValue gguf_string_array(std::vector<std::string> values) {
    std::vector<GgufValue> elements;
    elements.reserve(values.size());
    for (std::string& v : values) {
        elements.push_back(gguf_string(std::move(v)));
    }
    return GgufValue{.type = GgufValueType::Array, .element_type = GgufValueType::String, .value = std::move(elements)};
}
GgufValue gguf_int32_array(std::span<const std::int32_t> values) {
    std::vector<GgufValue> elements;
    elements.reserve(values.size());
    for (const std::int32_t v : values) {
        elements.push_back(gguf_int32(v));
    }
    return GgufValue{.type = GgufValueType::Array, .element_type = GgufValueType::I32, .value = std::move(elements)};
}

}  // namespace vkf
