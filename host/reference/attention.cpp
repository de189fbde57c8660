#include "host/reference/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "base/error.hpp"
#include "host/reference/parallel.hpp"
#include "host/util/math.hpp"

namespace vkf::reference {
namespace {

void require_elements(std::span<const double> array, const char* name, std::uint32_t batch, std::uint32_t rows,
                      std::uint32_t heads, std::uint32_t head_dim, std::size_t expected) {
    if (array.size() != expected) {
        throw Error(std::string("reference::attention: ") + name + " has " + fmt::to_string(array.size()) +
                    " elements but its shape [" + fmt::to_string(batch) + ", " + fmt::to_string(rows) + ", " +
                    fmt::to_string(heads) + ", " + fmt::to_string(head_dim) + "] needs " + fmt::to_string(expected));
    }
}

std::size_t kv_row_offset(const AttentionShape& s, std::uint32_t batch, std::size_t row, std::uint32_t kv_head) {
    return ((static_cast<std::size_t>(batch) * s.kv_len + row) * s.n_kv_head + kv_head) * s.head_dim;
}

// Eight independent partial sums keep the adds from forming one long dependency chain
// and let the compiler use SIMD registers even at -O2. Summation order is irrelevant at
// double precision for a comparison against float results.
double dot(const double* a, const double* b, std::size_t n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0;
    std::size_t d = 0;
    for (; d + 8 <= n; d += 8) {
        s0 += a[d] * b[d];
        s1 += a[d + 1] * b[d + 1];
        s2 += a[d + 2] * b[d + 2];
        s3 += a[d + 3] * b[d + 3];
        s4 += a[d + 4] * b[d + 4];
        s5 += a[d + 5] * b[d + 5];
        s6 += a[d + 6] * b[d + 6];
        s7 += a[d + 7] * b[d + 7];
    }
    for (; d < n; ++d) {
        s0 += a[d] * b[d];
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

// Keys are packed in blocks of kKeyBlock: block g holds keys g*kKeyBlock + u as
// [head_dim][kKeyBlock], so that scoring a block reads one contiguous run of doubles per
// dimension and the compiler can keep the kKeyBlock sums in SIMD registers. Key slots of
// the last block beyond the valid keys are zero and their scores are ignored.
constexpr std::size_t kKeyBlock = 8;

void gather_key_blocks(std::span<const double> src, const AttentionShape& s, std::uint32_t batch, std::uint32_t kv_head,
                       std::uint32_t rows, std::vector<double>& dst) {
    const std::size_t dim = s.head_dim;
    const std::size_t padded_rows = round_up(rows, kKeyBlock);
    std::fill(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(padded_rows * dim), 0.0);
    for (std::size_t j = 0; j < rows; ++j) {
        const double* row = src.data() + kv_row_offset(s, batch, j, kv_head);
        double* block = dst.data() + (j / kKeyBlock) * dim * kKeyBlock;
        for (std::size_t d = 0; d < dim; ++d) {
            block[d * kKeyBlock + j % kKeyBlock] = row[d];
        }
    }
}

// scores[u] = q . key u of the block, for u < kKeyBlock.
void score_key_block(const double* q, const double* block, std::size_t dim, double* scores) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0;
    for (std::size_t d = 0; d < dim; ++d) {
        const double qd = q[d];
        const double* k = block + d * kKeyBlock;
        s0 += qd * k[0];
        s1 += qd * k[1];
        s2 += qd * k[2];
        s3 += qd * k[3];
        s4 += qd * k[4];
        s5 += qd * k[5];
        s6 += qd * k[6];
        s7 += qd * k[7];
    }
    scores[0] = s0;
    scores[1] = s1;
    scores[2] = s2;
    scores[3] = s3;
    scores[4] = s4;
    scores[5] = s5;
    scores[6] = s6;
    scores[7] = s7;
}

// Values are transposed to [head_dim][kv_len]: the weighted sum of value rows then
// becomes head_dim dot products over contiguous memory.
void gather_kv_head_transposed(std::span<const double> src, const AttentionShape& s, std::uint32_t batch,
                               std::uint32_t kv_head, std::uint32_t rows, std::vector<double>& dst) {
    const std::size_t dim = s.head_dim;
    for (std::size_t j = 0; j < rows; ++j) {
        const double* row = src.data() + kv_row_offset(s, batch, j, kv_head);
        for (std::size_t d = 0; d < dim; ++d) {
            dst[d * s.kv_len + j] = row[d];
        }
    }
}

// Scratch buffers for one (batch, KV head) at a time, allocated once per call.
struct Scratch {
    std::vector<double> key_blocks;         // see gather_key_blocks
    std::vector<double> values_transposed;  // [head_dim, kv_len]
    std::vector<double> query;              // [head_dim]
    std::vector<double> weights;            // [kv_len rounded up]: scores, then exp terms
};

// One query row attending to keys [first, n_keys), the unmasked range; writes head_dim
// outputs. Two-pass softmax: the row maximum is subtracted before exp. Keys outside the range
// take no part (a NaN there changes nothing).
void attend_row(const AttentionParams& params, Scratch& scratch, double scale, double slope, std::int64_t position,
                std::size_t first, std::size_t n_keys, double* out) {
    const std::size_t dim = params.shape.head_dim;
    const double* query = scratch.query.data();
    double* weights = scratch.weights.data();

    // Whole blocks are scored, so weights holds n_keys rounded up to kKeyBlock entries.
    for (std::size_t block = first / kKeyBlock * kKeyBlock; block < n_keys; block += kKeyBlock) {
        score_key_block(query, scratch.key_blocks.data() + block * dim, dim, weights + block);
    }

    double row_max = -std::numeric_limits<double>::infinity();
    for (std::size_t j = first; j < n_keys; ++j) {
        const double bias = alibi_bias(params.alibi, slope, position, static_cast<std::int64_t>(j));
        // Falcon adds its bias to q.k and scales the sum.
        weights[j] = scale * weights[j] + (params.alibi == AlibiMode::FalconBf16 ? scale * bias : bias);
        row_max = std::max(row_max, weights[j]);
    }
    double sum = 0.0;
    for (std::size_t j = first; j < n_keys; ++j) {
        weights[j] = std::exp(weights[j] - row_max);
        sum += weights[j];
    }

    const double inv_sum = 1.0 / sum;
    const std::size_t kv_len = params.shape.kv_len;
    for (std::size_t d = 0; d < dim; ++d) {
        out[d] = dot(weights + first, scratch.values_transposed.data() + d * kv_len + first, n_keys - first) * inv_sum;
    }
}

}  // namespace

std::vector<double> attention(const AttentionParams& params, std::span<const double> q, std::span<const double> k,
                              std::span<const double> v, double scale, unsigned threads) {
    validate(params);
    const AttentionShape& s = params.shape;
    require_elements(q, "Q", s.batch, s.q_len, s.n_head, s.head_dim, q_element_count(s));
    require_elements(k, "K", s.batch, s.kv_len, s.n_kv_head, s.head_dim, kv_element_count(s));
    require_elements(v, "V", s.batch, s.kv_len, s.n_kv_head, s.head_dim, kv_element_count(s));

    const std::size_t dim = s.head_dim;
    const std::uint32_t heads_per_kv_head = s.n_head / s.n_kv_head;
    const std::size_t padded_kv_len = round_up(s.kv_len, kKeyBlock);
    std::vector<double> out(q.size(), 0.0);
    // Threads take KV heads; each output row is written by the thread of its head alone.
    parallel_ranges(s.n_kv_head, threads, 1, [&](std::size_t kv_begin, std::size_t kv_end) {
        Scratch scratch{
            .key_blocks = std::vector<double>(padded_kv_len * dim),
            .values_transposed = std::vector<double>(static_cast<std::size_t>(s.kv_len) * dim),
            .query = std::vector<double>(dim),
            .weights = std::vector<double>(padded_kv_len),
        };
        for (std::uint32_t b = 0; b < s.batch; ++b) {
            const std::uint32_t valid_keys = kv_len_of(params, b);
            // Absolute position of query row 0; negative when rows pad in front of the keys.
            const std::int64_t first_position =
                static_cast<std::int64_t>(valid_keys) - static_cast<std::int64_t>(s.q_len);

            for (auto kv_head = static_cast<std::uint32_t>(kv_begin); kv_head < kv_end; ++kv_head) {
                gather_key_blocks(k, s, b, kv_head, valid_keys, scratch.key_blocks);
                gather_kv_head_transposed(v, s, b, kv_head, valid_keys, scratch.values_transposed);

                for (std::uint32_t h = kv_head * heads_per_kv_head; h < (kv_head + 1) * heads_per_kv_head; ++h) {
                    const double slope = params.alibi == AlibiMode::Off
                                             ? 0.0
                                             : head_slope(params, h) * alibi_length_factor(params, valid_keys);

                    for (std::uint32_t i = 0; i < s.q_len; ++i) {
                        const std::int64_t position = first_position + i;
                        // Unmasked keys always form a range (a prefix without a window).
                        const KeyRange keys = visible_keys(params, position, valid_keys);
                        if (keys.end <= keys.first) {
                            continue;  // every key masked: the row stays zero
                        }
                        const std::size_t offset = ((static_cast<std::size_t>(b) * s.q_len + i) * s.n_head + h) * dim;
                        std::copy(q.begin() + static_cast<std::ptrdiff_t>(offset),
                                  q.begin() + static_cast<std::ptrdiff_t>(offset + dim), scratch.query.begin());
                        attend_row(params, scratch, scale, slope, position, static_cast<std::size_t>(keys.first),
                                   static_cast<std::size_t>(keys.end), out.data() + offset);
                    }
                }
            }
        }
    });
    return out;
}

std::vector<double> attention(const AttentionParams& params, std::span<const float> q, std::span<const float> k,
                              std::span<const float> v) {
    const auto widen = [](std::span<const float> values) { return std::vector<double>(values.begin(), values.end()); };
    return attention(params, widen(q), widen(k), widen(v), static_cast<double>(effective_scale(params)));
}

}  // namespace vkf::reference
