// Key windows (AttentionParams::window, llm-foundry's sliding_window_size) in every attention
// kernel against the double-precision reference: window edges around each kernel's key tile
// (W = 1, Bc - 1, Bc, Bc + 1, a W no tile divides, W past the sequence), causal and symmetric,
// split-KV, GQA/MQA, fp16 K/V, odd head sizes, every ALiBi form, forced device limits, and a
// paged ring at position 100,003. Every key no query row of a call may see is NaN in K and V
// (and O is poisoned): a kernel that reads one, even to multiply it by a zero, leaves a NaN.

#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/reference/attention.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/util/random.hpp"
#include "tests/ops/kv_quant_cases.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace vkf::test {
namespace {

enum class Kernel { Tiled, Rows, Naive };

const char* kernel_name(Kernel k) {
    return k == Kernel::Naive ? "naive" : k == Kernel::Rows ? "rows" : "tiled";
}

struct Mode {
    const char* name;
    MaskMode mask;
    AlibiMode alibi;
    std::uint32_t train_len;  // Jais' dynamic scaling
};
const Mode kCausal{"alibi causal", MaskMode::Causal, AlibiMode::Causal, 0};
const Mode kSymmetric{"symmetric encoder", MaskMode::None, AlibiMode::Symmetric, 0};
const Mode kModes[] = {kCausal,
                       {"falcon bf16", MaskMode::Causal, AlibiMode::FalconBf16, 0},
                       {"jais dynamic", MaskMode::Causal, AlibiMode::Causal, 40},
                       {"alibi off", MaskMode::Causal, AlibiMode::Off, 0},
                       kSymmetric};

struct WCase {
    AttentionShape shape;
    std::uint32_t window;
    Mode mode;
    DType dtype = DType::F32;
    std::optional<DType> kv_dtype = std::nullopt;
    Kernel kernel = Kernel::Tiled;
    std::uint32_t force_splits = 0;
    bool ragged = false;                      // per-batch key counts
    QuantFormat k_quant = QuantFormat::None;  // quantized K/V (fp32 Q/O, the other side fp16)
    QuantFormat v_quant = QuantFormat::None;
};

std::string name(const WCase& c) {
    const AttentionShape& s = c.shape;
    return std::string(kernel_name(c.kernel)) + " W" + std::to_string(c.window) + " b" + std::to_string(s.batch) +
           " q" + std::to_string(s.q_len) + " kv" + std::to_string(s.kv_len) + " h" + std::to_string(s.n_head) + "/" +
           std::to_string(s.n_kv_head) + " d" + std::to_string(s.head_dim) + " " + c.mode.name + " " +
           to_string(c.dtype) + (c.kv_dtype ? " kv f16" : "") + " splits " + std::to_string(c.force_splits) +
           (c.ragged ? " ragged" : "") + " K " + to_string(c.k_quant) + " V " + to_string(c.v_quant);
}

// NaN in every key no row of its batch may see (and every key past the batch's count).
void poison_unseen(const AttentionParams& params, std::vector<float>& k, std::vector<float>& v) {
    const AttentionShape& s = params.shape;
    const std::size_t row = std::size_t{s.n_kv_head} * s.head_dim;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::uint32_t b = 0; b < s.batch; ++b) {
        const std::uint32_t L = kv_len_of(params, b);
        std::vector<bool> seen(s.kv_len, false);
        for (std::uint32_t i = 0; i < s.q_len; ++i) {
            const KeyRange r = visible_keys(params, std::int64_t{L} - s.q_len + i, L);
            for (std::int64_t j = r.first; j < r.end; ++j) {
                seen[static_cast<std::size_t>(j)] = true;
            }
        }
        for (std::uint32_t j = 0; j < s.kv_len; ++j) {
            if (!seen[j]) {
                const std::size_t at = (std::size_t{b} * s.kv_len + j) * row;
                std::fill_n(k.begin() + static_cast<std::ptrdiff_t>(at), row, nan);
                std::fill_n(v.begin() + static_cast<std::ptrdiff_t>(at), row, nan);
            }
        }
    }
}

struct Result {
    std::vector<float> out;
    AttentionPlan plan;
};

Result run(Context& ctx, const WCase& c, std::uint64_t seed, bool check = true) {
    SCOPED_TRACE(name(c));
    const AttentionShape& s = c.shape;
    std::vector<std::uint32_t> kv_lens;
    if (c.ragged) {
        for (std::uint32_t b = 0; b < s.batch; ++b) {
            kv_lens.push_back(std::max(s.kv_len - b * 23, s.q_len));
        }
    }
    const AttentionParams params{.shape = s,
                                 .mask = c.mode.mask,
                                 .alibi = c.mode.alibi,
                                 .kv_lens = kv_lens,
                                 .alibi_train_len = c.mode.train_len,
                                 .window = c.window};
    // The naive op stores every tensor alike.
    // Quantized: fp16 for a side that is not (every kernel, the naive one too).
    const bool quant = c.k_quant != QuantFormat::None || c.v_quant != QuantFormat::None;
    const std::optional<DType> kv_storage = c.kernel == Kernel::Naive || quant ? std::nullopt : c.kv_dtype;
    const DType kv_dtype = quant ? DType::F16 : kv_storage.value_or(c.dtype);
    const auto q = rounded_to(c.dtype, random_uniform(q_element_count(s), seed, -1.0f, 1.0f));
    auto k = rounded_to(kv_dtype, random_uniform(kv_element_count(s), seed + 1, -1.0f, 1.0f));
    auto v = rounded_to(kv_dtype, random_uniform(kv_element_count(s), seed + 2, -1.0f, 1.0f));
    poison_unseen(params, k, v);
    const auto stored = [&](std::vector<float>& x, QuantFormat qf, const char* label) {
        return qf == QuantFormat::None ? upload_tensor(ctx, x, kv_dtype, label)
                                       : upload_words(ctx, quantize_poisoned(x, qf, s.n_kv_head * s.head_dim), label);
    };
    const DeviceTensor qb = upload_tensor(ctx, q, c.dtype, "Q");
    const DeviceTensor kb = stored(k, c.k_quant, "K");
    const DeviceTensor vb = stored(v, c.v_quant, "V");
    const DeviceTensor ob = nan_tensor(ctx, q.size(), c.dtype, "O");
    auto list = ctx.command_list();
    Result result;
    if (c.kernel == Kernel::Naive) {
        const NaiveAttention op(ctx, params, c.dtype, std::nullopt, c.k_quant, c.v_quant);
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
        ctx.submit(*list);
    } else {
        const Attention op(
            ctx, params, c.dtype,
            AttentionOptions{.force_splits = c.force_splits,
                             .kernel = c.kernel == Kernel::Rows ? AttentionKernel::Rows : AttentionKernel::Tiled,
                             .kv_dtype = kv_storage,
                             .k_quant = c.k_quant,
                             .v_quant = c.v_quant});
        result.plan = op.plan();
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range());
        ctx.submit(*list);
        if (c.force_splits > 1) {
            EXPECT_GT(result.plan.n_splits, 1u) << result.plan.describe();
        }
    }
    result.out = download_tensor(ctx, ob);
    if (check) {
        const ErrorStats e = compare_to_reference(result.out, reference::attention(params, q, k, v));
        EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "non-finite output at " << e.first_nonfinite;
        EXPECT_LT(e.max_rel, tolerance(c.dtype)) << describe(e) << " plan: " << result.plan.describe();
        EXPECT_LT(e.rel_l2, tolerance(c.dtype)) << describe(e);
    }
    return result;
}

class AttentionWindow : public VulkanTest {};

// W = 1, Bc - 1, Bc, Bc + 1 around the kernel's own key tile, and 29 (no tile's multiple), on a
// prefill of 67 rows: causal and symmetric, GQA, one batch with fewer keys than rows' span.
TEST_F(AttentionWindow, EdgesOfTheKeyTileMatchInEveryKernel) {
    std::uint64_t seed = 30000;
    for (Kernel kernel : {Kernel::Tiled, Kernel::Rows, Kernel::Naive}) {
        const AttentionShape shape{2, 67, 67, 4, 2, 64};
        std::uint32_t bc = 32;
        if (kernel != Kernel::Naive) {
            bc = run(ctx(), {shape, 0, kCausal, DType::F32, std::nullopt, kernel}, seed++).plan.keys_per_tile;
        }
        for (std::uint32_t w : {1u, bc - 1, bc, bc + 1, 29u}) {
            for (const Mode& mode : {kCausal, kSymmetric}) {
                run(ctx(), {shape, w, mode, DType::F32, std::nullopt, kernel, 0, w == 29u}, seed++);
            }
        }
    }
}

// A window past the sequence is full attention: the same output, bit for bit, unsplit.
TEST_F(AttentionWindow, WindowPastTheSequenceIsFullAttention) {
    for (Kernel kernel : {Kernel::Tiled, Kernel::Rows}) {
        for (const Mode& mode : {kCausal, kSymmetric}) {
            const AttentionShape shape{1, 9, 50, 4, 4, 64};
            const WCase full{shape, 0, mode, DType::F32, std::nullopt, kernel, 1};
            WCase wide = full;
            wide.window = 50;
            EXPECT_EQ(run(ctx(), full, 31000).out, run(ctx(), wide, 31000).out) << kernel_name(kernel);
        }
    }
}

// Decode and short chunks over long keys: split-KV splits only the window's range, with
// ragged key counts, fp16 K/V and GQA.
TEST_F(AttentionWindow, SplitKvDecodeSplitsTheWindow) {
    std::uint64_t seed = 32000;
    for (Kernel kernel : {Kernel::Tiled, Kernel::Rows}) {
        for (std::uint32_t q_len : {1u, 3u}) {
            run(ctx(), {{3, q_len, 613, 6, 2, 64}, 100, kCausal, DType::F32, DType::F16, kernel, 4, true}, seed++);
        }
    }
}

// Quantized K/V caches under a window in every kernel: prefill edges and split decoding.
TEST_F(AttentionWindow, QuantizedKvInEveryKernel) {
    std::uint64_t seed = 35000;
    std::size_t i = 0;
    const std::pair<QuantFormat, QuantFormat> formats[] = {{QuantFormat::Q8_0, QuantFormat::Q8_0},
                                                           {QuantFormat::Q4_0, QuantFormat::Q4_0},
                                                           {QuantFormat::Q8_0, QuantFormat::Q4_0}};
    for (Kernel kernel : {Kernel::Tiled, Kernel::Rows, Kernel::Naive}) {
        WCase prefill{
            {2, 67, 67, 4, 2, 64}, 29, kModes[i % std::size(kModes)], DType::F32, std::nullopt, kernel, 0, true};
        std::tie(prefill.k_quant, prefill.v_quant) = formats[i++ % std::size(formats)];
        run(ctx(), prefill, seed++);
        if (kernel != Kernel::Naive) {
            WCase decode{{3, 1, 613, 6, 2, 32}, 100, kCausal, DType::F32, std::nullopt, kernel, 4, true};
            std::tie(decode.k_quant, decode.v_quant) = formats[i++ % std::size(formats)];
            run(ctx(), decode, seed++);
        }
    }
}

// MQA at head size 42 (padded quads, pair loads) in fp16, q_len != kv_len, every ALiBi form.
TEST_F(AttentionWindow, MqaOddHeadSizeEveryAlibiForm) {
    std::uint64_t seed = 33000;
    for (const Mode& mode : kModes) {
        for (Kernel kernel : {Kernel::Tiled, Kernel::Rows, Kernel::Naive}) {
            run(ctx(), {{2, 5, 90, 4, 1, 42}, 17, mode, DType::F16, std::nullopt, kernel, 0, true}, seed++);
        }
    }
}

// Forced limits: the spec_minimum and phone presets (packed tables, small tiles) and each kernel.
TEST(AttentionWindowLimits, SpecMinimumAndPhone) {
    std::uint64_t seed = 34000;
    for (const char* spec : {"spec_minimum", "phone"}) {
        SCOPED_TRACE(spec);
        MessageSink sink;
        Context ctx(test_options(sink, LimitOverrides::parse(spec)));
        for (Kernel kernel : {Kernel::Tiled, Kernel::Rows, Kernel::Naive}) {
            run(ctx, {{2, 1, 300, 4, 2, 64}, 33, kCausal, DType::F32, DType::F16, kernel, 3, true}, seed++);
            run(ctx, {{1, 21, 70, 4, 2, 64}, 5, kSymmetric, DType::F32, std::nullopt, kernel}, seed++);
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
}

// ---- Paged ring: positions past the block table's capacity ----

struct RingSeq {
    std::uint32_t q_len, kv_len;
};

struct Ring {
    AttentionShape shape;
    PagedKv paged;
    std::uint32_t window;
    std::vector<RingSeq> specs;
    std::vector<std::vector<std::uint32_t>> blocks;
    std::vector<PagedSequence> seqs;
    std::vector<std::uint32_t> table;
    std::vector<float> q, k, v;                        // the pool: NaN but where a visible key lives
    std::vector<std::vector<float>> dense_k, dense_v;  // per sequence [kv_len] rows, NaN unseen
    // The reference per mode name, computed once (100,000 keys take it a while).
    mutable std::map<std::string, std::vector<double>> reference;
};

Ring make_ring(std::vector<RingSeq> specs, std::uint32_t window, std::uint32_t block_size, std::uint32_t blocks_per_seq,
               std::uint32_t n_head, std::uint32_t n_kv_head, std::uint32_t d, DType kv_dtype, std::uint64_t seed) {
    Ring r;
    r.window = window;
    r.specs = specs;
    const auto batch = static_cast<std::uint32_t>(specs.size());
    const std::uint32_t pool_blocks = batch * blocks_per_seq + 2;
    std::vector<std::uint32_t> ids(pool_blocks);
    std::iota(ids.begin(), ids.end(), 0u);
    std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
    std::uint32_t row = 0, max_q = 0;
    r.blocks.resize(batch);
    for (std::uint32_t b = 0; b < batch; ++b) {
        const std::uint32_t used =
            std::min<std::uint32_t>((specs[b].kv_len + block_size - 1) / block_size, blocks_per_seq);
        r.blocks[b].assign(ids.begin() + b * blocks_per_seq, ids.begin() + b * blocks_per_seq + used);
        r.seqs.push_back(
            PagedSequence{.q_start = row, .q_len = specs[b].q_len, .kv_len = specs[b].kv_len, .blocks = r.blocks[b]});
        row += specs[b].q_len;
        max_q = std::max(max_q, specs[b].q_len);
    }
    r.paged = PagedKv{.block_size = block_size, .blocks_per_seq = blocks_per_seq, .q_rows = row};
    r.shape = AttentionShape{batch, max_q, blocks_per_seq * block_size, n_head, n_kv_head, d};
    r.table = paged_sequence_table(r.seqs, r.paged, window);
    const std::size_t kv_row = std::size_t{n_kv_head} * d;
    r.q = random_uniform(std::size_t{row} * n_head * d, seed + 1, -1.0f, 1.0f);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    r.k.assign(std::size_t{pool_blocks} * block_size * kv_row, nan);
    r.v = r.k;
    for (std::uint32_t b = 0; b < batch; ++b) {
        const RingSeq& s = specs[b];
        r.dense_k.emplace_back(std::size_t{s.kv_len} * kv_row, nan);
        r.dense_v.emplace_back(std::size_t{s.kv_len} * kv_row, nan);
        const std::uint32_t first = s.kv_len - s.q_len > window ? s.kv_len - s.q_len - window : 0;
        const auto kr = rounded_to(kv_dtype, random_uniform((s.kv_len - first) * kv_row, seed + 2 + b, -1.0f, 1.0f));
        const auto vr = rounded_to(kv_dtype, random_uniform((s.kv_len - first) * kv_row, seed + 9 + b, -1.0f, 1.0f));
        for (std::uint32_t j = first; j < s.kv_len; ++j) {
            const std::size_t pool_row =
                std::size_t{r.blocks[b][(j / block_size) % blocks_per_seq]} * block_size + j % block_size;
            const std::size_t src = (j - first) * kv_row;
            std::copy_n(kr.begin() + src, kv_row, r.k.begin() + pool_row * kv_row);
            std::copy_n(vr.begin() + src, kv_row, r.v.begin() + pool_row * kv_row);
            std::copy_n(kr.begin() + src, kv_row, r.dense_k[b].begin() + j * kv_row);
            std::copy_n(vr.begin() + src, kv_row, r.dense_v[b].begin() + j * kv_row);
        }
    }
    return r;
}

void run_ring(Context& ctx, const Ring& r, Kernel kernel, std::uint32_t splits, const Mode& mode,
              std::optional<DType> kv_dtype) {
    SCOPED_TRACE(std::string(kernel_name(kernel)) + " splits " + std::to_string(splits) + " " + mode.name + " block " +
                 std::to_string(r.paged.block_size) + (kv_dtype ? " kv f16" : ""));
    const AttentionParams params{.shape = r.shape,
                                 .mask = mode.mask,
                                 .alibi = mode.alibi,
                                 .alibi_train_len = mode.train_len,
                                 .window = r.window};
    const DeviceTensor qb = upload_tensor(ctx, r.q, DType::F32, "Q");
    const DeviceTensor kb = upload_tensor(ctx, r.k, kv_dtype.value_or(DType::F32), "K pool");
    const DeviceTensor vb = upload_tensor(ctx, r.v, kv_dtype.value_or(DType::F32), "V pool");
    const DeviceTensor ob = nan_tensor(ctx, r.q.size(), DType::F32, "O");
    const DeviceTensor table = upload_words(ctx, r.table, "sequence table");
    auto list = ctx.command_list();
    if (kernel == Kernel::Naive) {
        const NaiveAttention op(ctx, params, DType::F32, r.paged);
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range(), table.range());
        ctx.submit(*list);
    } else {
        const Attention op(
            ctx, params, DType::F32,
            AttentionOptions{.force_splits = splits,
                             .kernel = kernel == Kernel::Rows ? AttentionKernel::Rows : AttentionKernel::Tiled,
                             .kv_dtype = kv_dtype,
                             .paged = r.paged});
        if (splits > 1) {
            EXPECT_GT(op.plan().n_splits, 1u) << op.plan().describe();
        }
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range(), table.range());
        ctx.submit(*list);
    }
    const std::vector<float> out = download_tensor(ctx, ob);
    const std::size_t q_row = std::size_t{r.shape.n_head} * r.shape.head_dim;
    std::vector<double>& want = r.reference[mode.name];
    const bool computed = !want.empty();
    for (std::size_t b = 0; !computed && b < r.seqs.size(); ++b) {
        const PagedSequence& s = r.seqs[b];
        AttentionParams one = params;
        one.shape = AttentionShape{1, s.q_len, s.kv_len, r.shape.n_head, r.shape.n_kv_head, r.shape.head_dim};
        const std::span<const float> q(r.q.data() + s.q_start * q_row, s.q_len * q_row);
        const auto ref = reference::attention(one, q, r.dense_k[b], r.dense_v[b]);
        want.insert(want.end(), ref.begin(), ref.end());
    }
    const ErrorStats e = compare_to_reference(out, want);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, tolerance(DType::F32)) << describe(e);
    EXPECT_LT(e.rel_l2, tolerance(DType::F32)) << describe(e);
}

// Position 100,003 with W = 40 in a ring of 4 blocks of 16 (and 10 of 5), next to a
// sequence inside its capacity and one that just wrapped: decode rows and a chunk of 7 (3).
// Falcon's bias, bf16(slope * j) added before the scale, is not shift-invariant: at j near
// 100,000 it is thousands and fp32 scores keep ~1e-4 of it, so it runs at position 300.
TEST_F(AttentionWindow, PagedRingPastTheCapacity) {
    std::uint64_t seed = 35000;
    for (auto [block_size, blocks_per_seq] : {std::pair{16u, 4u}, std::pair{5u, 10u}}) {
        const std::uint32_t q_chunk = block_size == 16 ? 7 : 3;
        const Ring r = make_ring({{1, 100003}, {q_chunk, 100003}, {3, 30}, {2, 71}}, 40, block_size, blocks_per_seq, 4,
                                 2, 32, DType::F32, seed += 10);
        const Mode modes[] = {kCausal, kModes[2], kModes[3]};  // alibi, jais dynamic, off
        std::size_t mode = 0;
        for (Kernel kernel : {Kernel::Tiled, Kernel::Rows}) {
            for (std::uint32_t splits : {1u, 3u}) {
                run_ring(ctx(), r, kernel, splits, modes[mode++ % 3], std::nullopt);
            }
        }
        run_ring(ctx(), r, Kernel::Naive, 0, modes[mode % 3], std::nullopt);
    }
    const Ring falcon = make_ring({{1, 300}, {5, 64}}, 40, 16, 4, 6, 2, 64, DType::F16, seed + 1);
    for (Kernel kernel : {Kernel::Tiled, Kernel::Rows}) {
        run_ring(ctx(), falcon, kernel, 3, kModes[1], DType::F16);
    }
}

// The ring rule (attention.hpp): the blocks a call's rows see must fit the table.
TEST(AttentionWindowTable, RingRule) {
    const PagedKv paged{.block_size = 16, .blocks_per_seq = 4, .q_rows = 16};
    const std::vector<std::uint32_t> four = {3, 1, 2, 0};
    auto table = [&](std::uint32_t q_len, std::uint32_t kv_len, std::uint32_t window) {
        const PagedSequence s{.q_start = 0, .q_len = q_len, .kv_len = kv_len, .blocks = four};
        return paged_sequence_table(std::span(&s, 1), paged, window);
    };
    EXPECT_NO_THROW(table(1, 100003, 40));       // keys 99962 .. 100002: blocks 6247 .. 6250
    EXPECT_NO_THROW(table(1, 100000, 63));       // keys 99936 .. 99999: blocks 6246 .. 6249
    EXPECT_THROW(table(1, 100000, 64), Error);   // key 99935 is in block 6245: 5 blocks
    EXPECT_NO_THROW(table(16, 100000, 40));      // keys 99944 .. 99999
    EXPECT_THROW(table(16, 100000, 50), Error);  // keys 99934 .. 99999
    EXPECT_THROW(table(1, 100003, 0), Error);    // no window: kv_len <= capacity
    EXPECT_NO_THROW(table(1, 64, 0));
}

}  // namespace
}  // namespace vkf::test
