#pragma once
// How long one submission may run before vkformer reports the device as hung
// (ContextOptions::timeout, VKF_TIMEOUT_MS, the programs' --timeout). One maximum for all of
// them, so that converting to the nanoseconds vkWaitForFences takes can never overflow.

#include <chrono>
#include <string_view>

namespace vkf {

// 1e9 ms, about 11.6 days: far beyond any submission, far below the 9.2e12 ms at which the
// conversion to signed 64-bit nanoseconds would overflow.
inline constexpr std::chrono::milliseconds kMaxTimeout{1'000'000'000};

// `text` as a timeout: the whole string a decimal integer of milliseconds (digits only, no
// sign, space, exponent or unit), from 1 to kMaxTimeout. Throws vkf::Error naming `source`
// (e.g. "VKF_TIMEOUT_MS") and the text otherwise.
std::chrono::milliseconds parse_timeout_ms(std::string_view text, std::string_view source);

// Throws vkf::Error naming `source` unless 1 ms <= timeout <= kMaxTimeout.
void check_timeout(std::chrono::milliseconds timeout, std::string_view source);

// The timeout as vkWaitForFences takes it.
std::uint64_t timeout_nanoseconds(std::chrono::milliseconds timeout);

}  // namespace vkf
