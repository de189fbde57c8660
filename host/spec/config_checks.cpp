#include "host/spec/config_checks.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <cmath>

namespace vkf {

void ConfigChecks::fail(std::string_view problem) const {
    throw Error(subject_ + ": " + std::string(problem));
}

void ConfigChecks::at_most(std::string_view name, std::uint32_t value, std::uint32_t limit) const {
    if (value > limit) {
        fail(std::string(name) + " " + fmt::to_string(value) + " is over vkformer's limit of " + fmt::to_string(limit) +
             " (no real checkpoint comes near it)");
    }
}

void ConfigChecks::head_split(std::uint32_t hidden, std::uint32_t n_head, std::uint32_t head_dim) const {
    if (hidden % n_head != 0) {
        fail("hidden " + fmt::to_string(hidden) + " is not a multiple of n_head " + fmt::to_string(n_head));
    }
    if (head_dim != hidden / n_head) {
        fail("head_dim " + fmt::to_string(head_dim) + " is not hidden / n_head = " + fmt::to_string(hidden / n_head));
    }
}

void ConfigChecks::positive(double value, std::string_view what) const {
    if (!(value > 0.0) || !std::isfinite(value)) {
        fail(std::string(what) + " must be positive and finite");
    }
}

}  // namespace vkf
