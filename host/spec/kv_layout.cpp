#include "host/spec/kv_layout.hpp"

namespace vkf {

HeadLayout HeadLayout::dense(std::uint32_t len, std::uint32_t heads, std::uint32_t head_dim) {
    return HeadLayout{.offset = 0,
                      .batch_stride = std::uint64_t{len} * heads * head_dim,
                      .token_stride = std::uint64_t{heads} * head_dim,
                      .head_stride = head_dim};
}

}  // namespace vkf
