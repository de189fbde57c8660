#pragma once
// Where new keys and values come from and where they go in a KV cache: shared by the
// KV-append op and its CPU reference.

#include <cstdint>

namespace vkf {

// Where element (b, t, h, d) of the new rows sits in the fp32 source, in elements:
// offset + b * batch_stride + t * token_stride + h * head_stride + d.
struct HeadLayout {
    std::uint64_t offset = 0;
    std::uint64_t batch_stride = 0;
    std::uint64_t token_stride = 0;
    std::uint64_t head_stride = 0;
    // A dense [batch, len, heads, head_dim] tensor.
    static HeadLayout dense(std::uint32_t len, std::uint32_t heads, std::uint32_t head_dim);
};

// A cache [batch, max_len, n_kv_head, head_dim] receiving rows pos..pos+new_len-1 of every
// batch; pos + new_len <= max_len.
struct KvAppendShape {
    std::uint32_t batch = 0, new_len = 0, n_kv_head = 0, head_dim = 0;  // head_dim even
    std::uint32_t max_len = 0;
    std::uint32_t pos = 0;
};

}  // namespace vkf
