#pragma once
// What host/ops/attention.cpp (the op) and attention_plan.cpp (its planning) share.

#include "host/ops/attention.hpp"

#include <cstdint>
#include <string>

namespace vkf::attention_detail {

std::string bytes_text(std::uint64_t n);
// The PACKED_TABLES variants' tables after the partial records: the slope table (n_head
// floats), then the key counts (batch uints) or a paged batch's sequence table.
std::uint64_t attention_tables_bytes(const AttentionShape& shape, const AttentionOptions& options);
// The split-KV partial records: D values, the row max and sum per row, head, batch and split.
std::uint64_t attention_partials_bytes(const AttentionShape& shape, std::uint32_t n_splits);

}  // namespace vkf::attention_detail
