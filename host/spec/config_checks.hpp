#pragma once
// The checks that validate(ModelConfig) and validate(EncoderConfig) share, worded alike:
// every failure is a vkf::Error "SUBJECT: problem" ("model config (bloom): n_layer 2000 is
// over vkformer's limit of 1024 (no real checkpoint comes near it)").

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace vkf {

class ConfigChecks {
public:
    explicit ConfigChecks(std::string subject) : subject_(std::move(subject)) {}

    [[noreturn]] void fail(std::string_view problem) const;
    // "NAME VALUE is over vkformer's limit of LIMIT ...".
    void at_most(std::string_view name, std::uint32_t value, std::uint32_t limit) const;
    // hidden a multiple of n_head, and head_dim = hidden / n_head (n_head > 0).
    void head_split(std::uint32_t hidden, std::uint32_t n_head, std::uint32_t head_dim) const;
    // "WHAT must be positive and finite".
    void positive(double value, std::string_view what) const;

private:
    std::string subject_;
};

}  // namespace vkf
