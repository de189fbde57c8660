// The sequence table of paged, ragged attention batches (host/ops/attention.hpp, PagedKv).
#include "host/ops/attention.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string>

namespace vkf {

namespace {

std::string sequence_text(std::size_t b, const PagedSequence& s) {
    return "paged attention: sequence " + fmt::to_string(b) + " (q_start " + fmt::to_string(s.q_start) + ", q_len " +
           fmt::to_string(s.q_len) + ", kv_len " + fmt::to_string(s.kv_len) + ", " + fmt::to_string(s.blocks.size()) +
           " blocks)";
}

void check_layout(const PagedKv& paged) {
    if (paged.block_size == 0 || paged.blocks_per_seq == 0 || paged.q_rows == 0) {
        throw Error("paged attention: block_size " + fmt::to_string(paged.block_size) + ", blocks_per_seq " +
                    fmt::to_string(paged.blocks_per_seq) + " and q_rows " + fmt::to_string(paged.q_rows) +
                    " must all be at least 1");
    }
    if (std::uint64_t{paged.block_size} * paged.blocks_per_seq > UINT32_MAX) {
        throw Error("paged attention: " + fmt::to_string(paged.blocks_per_seq) + " blocks of " +
                    fmt::to_string(paged.block_size) + " keys overflow a 32-bit key count");
    }
}

}  // namespace

void check_paged(const AttentionShape& shape, const PagedKv& paged) {
    check_layout(paged);
    const std::uint64_t capacity = std::uint64_t{paged.block_size} * paged.blocks_per_seq;
    if (shape.kv_len != capacity) {
        throw Error("paged attention: the shape's kv_len " + fmt::to_string(shape.kv_len) + " is not blocks_per_seq " +
                    fmt::to_string(paged.blocks_per_seq) + " x block_size " + fmt::to_string(paged.block_size) + " = " +
                    fmt::to_string(capacity));
    }
    // The kernels index table words and Q/O rows in 32 bits.
    if (std::uint64_t{shape.batch} * (3 + std::uint64_t{paged.blocks_per_seq}) > UINT32_MAX ||
        std::uint64_t{paged.q_rows} * shape.n_head * shape.head_dim > UINT32_MAX) {
        throw Error("paged attention: " + fmt::to_string(shape.batch) + " sequences of " +
                    fmt::to_string(paged.blocks_per_seq) + " blocks over " + fmt::to_string(paged.q_rows) +
                    " rows overflow 32-bit indices");
    }
}

std::uint64_t paged_sequence_table_bytes(std::uint32_t batch, const PagedKv& paged) {
    return std::uint64_t{4} * VKF_ATTN_SEQ_WORDS(std::uint64_t{batch}, paged.blocks_per_seq);
}

std::vector<std::uint32_t> paged_sequence_table(std::span<const PagedSequence> seqs, const PagedKv& paged,
                                                std::uint32_t window) {
    check_layout(paged);
    if (seqs.empty()) {
        throw Error("paged attention: a batch needs at least one sequence");
    }
    if (seqs.size() > UINT32_MAX / (3 + std::uint64_t{paged.blocks_per_seq})) {
        throw Error("paged attention: " + fmt::to_string(seqs.size()) + " sequences overflow the sequence table");
    }
    const auto batch = static_cast<std::uint32_t>(seqs.size());
    const std::uint64_t capacity = std::uint64_t{paged.block_size} * paged.blocks_per_seq;
    std::vector<std::uint32_t> table(VKF_ATTN_SEQ_WORDS(batch, paged.blocks_per_seq), 0);
    for (std::uint32_t b = 0; b < batch; ++b) {
        const PagedSequence& s = seqs[b];
        if (s.q_len == 0 || s.q_len > s.kv_len) {
            throw Error(sequence_text(b, s) + ": q_len must be 1 .. kv_len");
        }
        if (window == 0 && s.kv_len > capacity) {
            throw Error(sequence_text(b, s) +
                        ": kv_len exceeds blocks_per_seq x block_size = " + fmt::to_string(capacity));
        }
        if (window != 0) {
            // The ring must hold every key a row of this call may see (attention.hpp).
            const std::uint64_t first = s.kv_len - s.q_len > window ? s.kv_len - s.q_len - window : 0;
            const std::uint64_t spanned = (s.kv_len - 1) / paged.block_size - first / paged.block_size + 1;
            if (spanned > paged.blocks_per_seq) {
                throw Error(sequence_text(b, s) + ": with window " + fmt::to_string(window) + " its rows see keys " +
                            fmt::to_string(first) + " .. " + fmt::to_string(s.kv_len - 1) + ", " +
                            fmt::to_string(spanned) + " blocks, more than the ring's blocks_per_seq " +
                            fmt::to_string(paged.blocks_per_seq));
            }
        }
        if (std::uint64_t{s.q_start} + s.q_len > paged.q_rows) {
            throw Error(sequence_text(b, s) + ": rows past q_rows " + fmt::to_string(paged.q_rows));
        }
        const std::uint64_t used = std::min<std::uint64_t>(
            (std::uint64_t{s.kv_len} + paged.block_size - 1) / paged.block_size, paged.blocks_per_seq);
        if (s.blocks.size() < used) {
            throw Error(sequence_text(b, s) + ": " + fmt::to_string(used) + " blocks of " +
                        fmt::to_string(paged.block_size) + " keys needed");
        }
        if (s.blocks.size() > paged.blocks_per_seq) {
            throw Error(sequence_text(b, s) + ": more blocks than blocks_per_seq " +
                        fmt::to_string(paged.blocks_per_seq));
        }
        table[VKF_ATTN_SEQ_KV_LEN(batch, b)] = s.kv_len;
        table[VKF_ATTN_SEQ_Q_START(batch, b)] = s.q_start;
        table[VKF_ATTN_SEQ_Q_LEN(batch, b)] = s.q_len;
        std::copy(s.blocks.begin(), s.blocks.end(),
                  table.begin() + VKF_ATTN_SEQ_BLOCK(std::size_t{batch}, paged.blocks_per_seq, b, 0));
    }
    // Two sequences writing the same rows of O would race.
    std::vector<std::uint32_t> order(batch);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return seqs[a].q_start < seqs[b].q_start; });
    for (std::size_t i = 1; i < order.size(); ++i) {
        const PagedSequence& prev = seqs[order[i - 1]];
        if (prev.q_start + prev.q_len > seqs[order[i]].q_start) {
            throw Error(sequence_text(order[i], seqs[order[i]]) + ": its rows overlap those of sequence " +
                        fmt::to_string(order[i - 1]));
        }
    }
    return table;
}

}  // namespace vkf
