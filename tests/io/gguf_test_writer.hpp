#pragma once
// A small GGUF writer for tests and fuzz seeds: it writes exactly what it is told, so tests
// can also build files that lie (wrong counts, offsets, types).

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::test {

class GgufBytes {
public:
    GgufBytes& u8(std::uint8_t v) { return raw(&v, 1); }
    GgufBytes& u32(std::uint32_t v) { return le(v, 4); }
    GgufBytes& u64(std::uint64_t v) { return le(v, 8); }
    GgufBytes& f32(float v) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &v, 4);
        return u32(bits);
    }
    GgufBytes& str(std::string_view s) {
        u64(s.size());
        bytes_.append(s);
        return *this;
    }
    GgufBytes& raw(const void* data, std::size_t n) {
        bytes_.append(static_cast<const char*>(data), n);
        return *this;
    }
    GgufBytes& text(std::string_view s) {
        bytes_.append(s);
        return *this;
    }
    // "GGUF", the version and both counts.
    GgufBytes& header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
        return text("GGUF").u32(version).u64(n_tensors).u64(n_kv);
    }
    GgufBytes& kv_u32(std::string_view key, std::uint32_t v) { return str(key).u32(4).u32(v); }
    GgufBytes& kv_f32(std::string_view key, float v) { return str(key).u32(6).f32(v); }
    GgufBytes& kv_str(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
    // A tensor info; dims innermost first, as the file stores them.
    GgufBytes& tensor(std::string_view name, const std::vector<std::uint64_t>& dims, std::uint32_t type,
                      std::uint64_t offset) {
        str(name).u32(static_cast<std::uint32_t>(dims.size()));
        for (const std::uint64_t d : dims) {
            u64(d);
        }
        return u32(type).u64(offset);
    }
    GgufBytes& pad(std::size_t alignment) {
        while (bytes_.size() % alignment != 0) {
            bytes_.push_back('\0');
        }
        return *this;
    }
    std::size_t size() const { return bytes_.size(); }
    const std::string& bytes() const { return bytes_; }

private:
    GgufBytes& le(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) {
            bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
        }
        return *this;
    }
    std::string bytes_;
};

}  // namespace vkf::test
