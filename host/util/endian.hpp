#pragma once
// Little-endian integers in byte buffers: every file format vkformer reads or writes
// (safetensors, .npy) stores them so, whatever the host's byte order.

#include <concepts>
#include <cstddef>
#include <span>

namespace vkf {

// The first sizeof(T) bytes of `bytes` as a little-endian T, or the first `count` when
// given (a 2-byte length read into a wider integer).
template <std::unsigned_integral T>
T load_le(const std::byte* bytes, std::size_t count = sizeof(T)) {
    T value = 0;
    for (std::size_t i = 0; i < count; ++i) {
        value = static_cast<T>(value | static_cast<T>(static_cast<T>(bytes[i]) << (8 * i)));
    }
    return value;
}

// Writes the low `count` bytes of `value` (all of them by default), least significant first.
template <std::unsigned_integral T>
void store_le(std::byte* out, T value, std::size_t count = sizeof(T)) {
    for (std::size_t i = 0; i < count; ++i) {
        out[i] = static_cast<std::byte>((value >> (8 * i)) & 0xffu);
    }
}

}  // namespace vkf
