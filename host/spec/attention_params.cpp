#include "host/spec/attention_params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>

#include "base/error.hpp"

namespace vkf {
namespace {

std::string shape_text(const AttentionShape& s) {
    return "(batch " + fmt::to_string(s.batch) + ", q_len " + fmt::to_string(s.q_len) + ", kv_len " +
           fmt::to_string(s.kv_len) + ", n_head " + fmt::to_string(s.n_head) + ", n_kv_head " +
           fmt::to_string(s.n_kv_head) + ", head_dim " + fmt::to_string(s.head_dim) + ")";
}

std::size_t checked_product(std::initializer_list<std::uint32_t> factors, const char* tensor,
                            const AttentionShape& shape) {
    std::size_t product = 1;
    for (std::uint32_t factor : factors) {
        if (factor != 0 && product > std::numeric_limits<std::size_t>::max() / factor) {
            throw Error(std::string("attention: element count of ") + tensor + " overflows size_t for shape " +
                        shape_text(shape));
        }
        product *= factor;
    }
    return product;
}

void require_nonzero(std::uint32_t value, const char* name, const AttentionShape& shape) {
    if (value == 0) {
        throw Error(std::string("attention: ") + name + " must not be 0 in shape " + shape_text(shape));
    }
}

}  // namespace

float effective_scale(const AttentionParams& params) {
    if (params.scale) {
        return *params.scale;
    }
    return static_cast<float>(1.0 / std::sqrt(static_cast<double>(params.shape.head_dim)));
}

void validate(const AttentionParams& params) {
    const AttentionShape& s = params.shape;
    require_nonzero(s.batch, "batch", s);
    require_nonzero(s.q_len, "q_len", s);
    require_nonzero(s.kv_len, "kv_len", s);
    require_nonzero(s.n_head, "n_head", s);
    require_nonzero(s.n_kv_head, "n_kv_head", s);
    require_nonzero(s.head_dim, "head_dim", s);
    if (s.n_head % s.n_kv_head != 0) {
        throw Error("attention: n_head " + fmt::to_string(s.n_head) + " is not a multiple of n_kv_head " +
                    fmt::to_string(s.n_kv_head));
    }
    q_element_count(s);
    kv_element_count(s);

    if (params.mask != MaskMode::None && params.mask != MaskMode::Causal) {
        throw Error("attention: unknown mask mode " + fmt::to_string(static_cast<std::uint32_t>(params.mask)));
    }
    if (params.alibi != AlibiMode::Off && params.alibi != AlibiMode::Causal && params.alibi != AlibiMode::Symmetric &&
        params.alibi != AlibiMode::FalconBf16) {
        throw Error("attention: unknown ALiBi mode " + fmt::to_string(static_cast<std::uint32_t>(params.alibi)));
    }
    if (params.scale && !std::isfinite(*params.scale)) {
        throw Error("attention: scale " + fmt::format("{:f}", *params.scale) + " is not finite");
    }
    if (params.window > kMaxAttentionWindow) {
        throw Error("attention: window " + fmt::to_string(params.window) + " exceeds " +
                    fmt::to_string(kMaxAttentionWindow));
    }
    if (!std::isfinite(params.max_bias)) {
        throw Error("attention: max_bias " + fmt::format("{:f}", params.max_bias) + " is not finite");
    }

    if (!params.slopes.empty()) {
        if (params.slopes.size() != s.n_head) {
            throw Error("attention: slope table has " + fmt::to_string(params.slopes.size()) +
                        " entries but n_head is " + fmt::to_string(s.n_head));
        }
        for (std::size_t h = 0; h < params.slopes.size(); ++h) {
            if (!std::isfinite(params.slopes[h])) {
                throw Error("attention: slopes[" + fmt::to_string(h) + "] is not finite");
            }
        }
    }

    if (!params.kv_lens.empty()) {
        if (params.kv_lens.size() != s.batch) {
            throw Error("attention: kv_lens has " + fmt::to_string(params.kv_lens.size()) + " entries but batch is " +
                        fmt::to_string(s.batch));
        }
        for (std::size_t b = 0; b < params.kv_lens.size(); ++b) {
            if (params.kv_lens[b] > s.kv_len) {
                throw Error("attention: kv_lens[" + fmt::to_string(b) + "] = " + fmt::to_string(params.kv_lens[b]) +
                            " exceeds kv_len " + fmt::to_string(s.kv_len));
            }
        }
    }
}

std::size_t q_element_count(const AttentionShape& shape) {
    return checked_product({shape.batch, shape.q_len, shape.n_head, shape.head_dim}, "Q", shape);
}

std::size_t kv_element_count(const AttentionShape& shape) {
    return checked_product({shape.batch, shape.kv_len, shape.n_kv_head, shape.head_dim}, "K/V", shape);
}

std::uint32_t kv_head_of(const AttentionShape& shape, std::uint32_t head) {
    return head / (shape.n_head / shape.n_kv_head);
}

std::uint32_t kv_len_of(const AttentionParams& params, std::uint32_t batch) {
    return params.kv_lens.empty() ? params.shape.kv_len : params.kv_lens[batch];
}

KeyRange visible_keys(const AttentionParams& params, std::int64_t position, std::uint32_t valid_keys) {
    KeyRange range{0, valid_keys};
    if (params.mask == MaskMode::Causal) {
        range.end = std::min<std::int64_t>(range.end, position + 1);
    }
    if (params.window != 0) {
        range.first = std::max<std::int64_t>(0, position - params.window);
        range.end = std::min<std::int64_t>(range.end, position + params.window + 1);
    }
    return range;
}

double alibi_length_factor(const AttentionParams& params, std::uint32_t valid_keys) {
    return params.alibi_train_len != 0 && valid_keys > params.alibi_train_len
               ? static_cast<double>(params.alibi_train_len) / static_cast<double>(valid_keys)
               : 1.0;
}

double head_slope(const AttentionParams& params, std::uint32_t head) {
    if (!params.slopes.empty()) {
        return static_cast<double>(params.slopes[head]);
    }
    return alibi_slope(head, params.shape.n_head, static_cast<double>(params.max_bias));
}

}  // namespace vkf
