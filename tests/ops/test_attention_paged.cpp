// Paged, ragged attention batches (AttentionOptions::paged, NaiveAttention's PagedKv) against
// the double-precision reference run on each sequence alone with contiguous K/V: seeded random
// batches mixing decode rows and prefill chunks, block tables drawn from a shuffled pool larger
// than needed, every kernel (tiled, rows, split-KV, naive), PACKED_TABLES, and every ALiBi
// form. O is poisoned before each run, and so is every pool row that holds no key of a
// sequence: a kernel that reads one, or writes a row of no sequence, leaves a NaN behind.

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
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace vkf::test {
namespace {

struct SeqSpec {
    std::uint32_t q_len, kv_len;
};

// A random paged batch: packed Q rows with a row of no sequence before every other sequence,
// sequences placed in reverse order, blocks handed out from a shuffled pool with spare blocks.
struct Batch {
    AttentionShape shape;
    PagedKv paged;
    std::vector<std::vector<std::uint32_t>> blocks;
    std::vector<PagedSequence> seqs;
    std::vector<std::uint32_t> table;
    std::vector<float> q, k, v;  // Q: q_rows rows; K, V: the pool, NaN where no key lives
    std::vector<bool> covered;   // per row of Q and O: whether a sequence owns it
};

Batch make_batch(const std::vector<SeqSpec>& specs, std::uint32_t n_head, std::uint32_t n_kv_head, std::uint32_t d,
                 std::uint32_t block_size, DType dtype, DType kv_dtype, std::uint64_t seed) {
    Batch bt;
    const auto batch = static_cast<std::uint32_t>(specs.size());
    std::uint32_t max_q = 0, max_blocks = 0, used_blocks = 0;
    for (const SeqSpec& s : specs) {
        max_q = std::max(max_q, s.q_len);
        const std::uint32_t n = (s.kv_len + block_size - 1) / block_size;
        max_blocks = std::max(max_blocks, n);
        used_blocks += n;
    }
    // One spare table entry per sequence (unused, 0), three spare blocks in the pool.
    bt.paged = PagedKv{.block_size = block_size, .blocks_per_seq = max_blocks + 1, .q_rows = 0};
    const std::uint32_t pool_blocks = used_blocks + 3;
    std::vector<std::uint32_t> ids(pool_blocks);
    std::iota(ids.begin(), ids.end(), 0u);
    std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed + 5));

    std::uint32_t row = 0, next_block = 0;
    bt.seqs.resize(batch);
    bt.blocks.resize(batch);
    for (std::uint32_t i = 0; i < batch; ++i) {
        const std::uint32_t b = batch - 1 - i;
        row += i % 2;  // a row of no sequence
        const SeqSpec& s = specs[b];
        const std::uint32_t n = (s.kv_len + block_size - 1) / block_size;
        bt.blocks[b].assign(ids.begin() + next_block, ids.begin() + next_block + n);
        next_block += n;
        bt.seqs[b] = PagedSequence{.q_start = row, .q_len = s.q_len, .kv_len = s.kv_len, .blocks = bt.blocks[b]};
        row += s.q_len;
    }
    bt.paged.q_rows = row + 1;  // and a last row of no sequence
    bt.shape = AttentionShape{batch, max_q, bt.paged.blocks_per_seq * block_size, n_head, n_kv_head, d};
    bt.table = paged_sequence_table(bt.seqs, bt.paged);

    const std::size_t q_row = std::size_t{n_head} * d, kv_row = std::size_t{n_kv_head} * d;
    bt.q = rounded_to(dtype, random_uniform(bt.paged.q_rows * q_row, seed, -1.0f, 1.0f));
    bt.covered.assign(bt.paged.q_rows, false);
    for (const PagedSequence& s : bt.seqs) {
        std::fill_n(bt.covered.begin() + s.q_start, s.q_len, true);
    }
    const std::size_t pool_elements = std::size_t{pool_blocks} * block_size * kv_row;
    bt.k = rounded_to(kv_dtype, random_uniform(pool_elements, seed + 1, -1.0f, 1.0f));
    bt.v = rounded_to(kv_dtype, random_uniform(pool_elements, seed + 2, -1.0f, 1.0f));
    std::vector<bool> live(std::size_t{pool_blocks} * block_size, false);
    for (const PagedSequence& s : bt.seqs) {
        for (std::uint32_t j = 0; j < s.kv_len; ++j) {
            live[std::size_t{s.blocks[j / block_size]} * block_size + j % block_size] = true;
        }
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t r = 0; r < live.size(); ++r) {
        if (!live[r]) {
            std::fill_n(bt.k.begin() + r * kv_row, kv_row, nan);
            std::fill_n(bt.v.begin() + r * kv_row, kv_row, nan);
        }
    }
    return bt;
}

struct Mode {
    const char* name;
    MaskMode mask;
    AlibiMode alibi;
    std::uint32_t train_len;  // Jais' dynamic scaling
};
const Mode kModes[] = {{"alibi causal", MaskMode::Causal, AlibiMode::Causal, 0},
                       {"falcon bf16", MaskMode::Causal, AlibiMode::FalconBf16, 0},
                       {"jais dynamic", MaskMode::Causal, AlibiMode::Causal, 40},
                       {"alibi off", MaskMode::Causal, AlibiMode::Off, 0}};

AttentionParams params_of(const AttentionShape& shape, const Mode& mode) {
    return AttentionParams{.shape = shape, .mask = mode.mask, .alibi = mode.alibi, .alibi_train_len = mode.train_len};
}

// Each sequence alone with its keys gathered into contiguous K and V; rows of no sequence 0.
std::vector<double> reference_of(const Batch& bt, const Mode& mode) {
    const std::size_t q_row = std::size_t{bt.shape.n_head} * bt.shape.head_dim;
    const std::size_t kv_row = std::size_t{bt.shape.n_kv_head} * bt.shape.head_dim;
    std::vector<double> out(bt.q.size(), 0.0);
    for (const PagedSequence& s : bt.seqs) {
        const AttentionShape one{1, s.q_len, s.kv_len, bt.shape.n_head, bt.shape.n_kv_head, bt.shape.head_dim};
        std::vector<float> k, v;
        for (std::uint32_t j = 0; j < s.kv_len; ++j) {
            const std::size_t at =
                (std::size_t{s.blocks[j / bt.paged.block_size]} * bt.paged.block_size + j % bt.paged.block_size) *
                kv_row;
            k.insert(k.end(), bt.k.begin() + at, bt.k.begin() + at + kv_row);
            v.insert(v.end(), bt.v.begin() + at, bt.v.begin() + at + kv_row);
        }
        const std::span<const float> q(bt.q.data() + s.q_start * q_row, s.q_len * q_row);
        const auto ref = reference::attention(params_of(one, mode), q, k, v);
        std::copy(ref.begin(), ref.end(), out.begin() + s.q_start * q_row);
    }
    return out;
}

enum class Kernel { Tiled, Rows, Naive };

struct Run {
    Kernel kernel;
    std::uint32_t force_splits;
    DType dtype;
    std::optional<DType> kv_dtype;
    const Mode& mode;
    QuantFormat k_quant = QuantFormat::None;  // quantized pools (fp32 Q/O, the other side fp16)
    QuantFormat v_quant = QuantFormat::None;
};

std::string name(const Batch& bt, const Run& r) {
    return std::string(r.kernel == Kernel::Naive  ? "naive"
                       : r.kernel == Kernel::Rows ? "rows"
                                                  : "tiled") +
           " splits " + std::to_string(r.force_splits) + " " + to_string(r.dtype) +
           (r.kv_dtype ? std::string(" kv ") + to_string(*r.kv_dtype) : "") + " K " + to_string(r.k_quant) + " V " +
           to_string(r.v_quant) + " " + r.mode.name + " block " + std::to_string(bt.paged.block_size) + " h" +
           std::to_string(bt.shape.n_head) + "/" + std::to_string(bt.shape.n_kv_head) + " d" +
           std::to_string(bt.shape.head_dim);
}

// Runs `r` on `bt` and checks every row of a sequence against the reference and every other
// row for its poison; returns the plan (default for the naive op).
AttentionPlan run_paged(Context& ctx, const Batch& batch, const Run& r) {
    SCOPED_TRACE(name(batch, r));
    const bool quant = r.k_quant != QuantFormat::None || r.v_quant != QuantFormat::None;
    const DType kv_dtype = r.kv_dtype.value_or(quant ? DType::F16 : r.dtype);
    const AttentionParams params = params_of(batch.shape, r.mode);
    Batch bt = batch;  // K and V as their storage holds them
    const auto pool = [&](std::vector<float>& values, QuantFormat q, const char* label) {
        if (q == QuantFormat::None) {
            values = rounded_to(kv_dtype, values);
            return upload_tensor(ctx, values, kv_dtype, label);
        }
        return upload_words(ctx, quantize_poisoned(values, q, bt.shape.n_kv_head * bt.shape.head_dim), label);
    };
    const DeviceTensor qb = upload_tensor(ctx, bt.q, r.dtype, "Q");
    const DeviceTensor kb = pool(bt.k, r.k_quant, "K pool");
    const DeviceTensor vb = pool(bt.v, r.v_quant, "V pool");
    const DeviceTensor ob = nan_tensor(ctx, bt.q.size(), r.dtype, "O");
    const DeviceTensor table = upload_words(ctx, bt.table, "sequence table");
    EXPECT_EQ(table.range().size, paged_sequence_table_bytes(bt.shape.batch, bt.paged));
    auto list = ctx.command_list();
    AttentionPlan plan;
    if (r.kernel == Kernel::Naive) {
        const NaiveAttention op(ctx, params, r.dtype, bt.paged, r.k_quant, r.v_quant);
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range(), table.range());
        ctx.submit(*list);
    } else {
        const Attention op(
            ctx, params, r.dtype,
            AttentionOptions{.force_splits = r.force_splits,
                             .kernel = r.kernel == Kernel::Rows ? AttentionKernel::Rows : AttentionKernel::Tiled,
                             .kv_dtype = r.kv_dtype,
                             .k_quant = r.k_quant,
                             .v_quant = r.v_quant,
                             .paged = bt.paged});
        plan = op.plan();
        if (r.force_splits > 1) {
            EXPECT_GT(plan.n_splits, 1u) << plan.describe();
        }
        op.record(*list, qb.range(), kb.range(), vb.range(), ob.range(), table.range());
        ctx.submit(*list);
    }
    const std::vector<float> out = download_tensor(ctx, ob);
    const std::vector<double> ref = reference_of(bt, r.mode);
    const std::size_t q_row = std::size_t{bt.shape.n_head} * bt.shape.head_dim;
    std::vector<float> got;
    std::vector<double> want;
    std::size_t unpoisoned = 0;
    for (std::size_t row = 0; row < bt.covered.size(); ++row) {
        for (std::size_t e = row * q_row; e < (row + 1) * q_row; ++e) {
            if (bt.covered[row]) {
                got.push_back(out[e]);
                want.push_back(ref[e]);
            } else {
                unpoisoned += std::isnan(out[e]) ? 0 : 1;
            }
        }
    }
    EXPECT_EQ(unpoisoned, 0u) << "elements written in rows of no sequence";
    const ErrorStats e = compare_to_reference(got, want);
    EXPECT_EQ(e.first_nonfinite, SIZE_MAX) << "unwritten or non-finite output at " << e.first_nonfinite;
    EXPECT_LT(e.max_rel, tolerance(r.dtype)) << describe(e) << " plan: " << plan.describe();
    EXPECT_LT(e.rel_l2, tolerance(r.dtype)) << describe(e);
    return plan;
}

// Decode rows (1) and prefill chunks (7, 13, 31) over odd and prime key counts.
const std::vector<SeqSpec> kRagged = {{1, 37}, {7, 101}, {13, 13}, {1, 199}, {31, 131}};

class AttentionPaged : public VulkanTest {};

TEST_F(AttentionPaged, RaggedGqaBatchesMatchInEveryKernel) {
    std::uint64_t seed = 9000;
    std::size_t mode = 0;
    for (std::uint32_t block_size : {16u, 5u}) {
        for (const std::optional<DType> kv_dtype : {std::optional<DType>{}, std::optional<DType>{DType::F16}}) {
            const Batch bt =
                make_batch(kRagged, 6, 2, 64, block_size, DType::F32, kv_dtype.value_or(DType::F32), seed += 10);
            for (Kernel kernel : {Kernel::Tiled, Kernel::Rows}) {
                for (std::uint32_t splits : {1u, 3u}) {
                    // fp16 K/V once per kernel, split or not (pipeline compiles dominate);
                    // DecodeBatchesSplitEachSequencesKeys has it split in both.
                    if (kv_dtype && (splits > 1) != (kernel == Kernel::Tiled)) {
                        continue;
                    }
                    run_paged(ctx(), bt, {kernel, splits, DType::F32, kv_dtype, kModes[mode++ % std::size(kModes)]});
                }
            }
            if (!kv_dtype) {
                run_paged(ctx(), bt, {Kernel::Naive, 0, DType::F32, std::nullopt, kModes[mode++ % std::size(kModes)]});
            }
        }
    }
}

// Quantized pools (q8_0, q4_0, K and V apart) in every kernel, split and not, every ALiBi
// form: the storages rotating over the kernels.
TEST_F(AttentionPaged, QuantizedPoolsMatchInEveryKernel) {
    const std::pair<QuantFormat, QuantFormat> formats[] = {{QuantFormat::Q8_0, QuantFormat::Q8_0},
                                                           {QuantFormat::Q4_0, QuantFormat::Q4_0},
                                                           {QuantFormat::Q8_0, QuantFormat::Q4_0},
                                                           {QuantFormat::None, QuantFormat::Q4_0}};
    const Batch bt = make_batch(kRagged, 6, 2, 64, 16, DType::F32, DType::F32, 9600);
    const std::pair<Kernel, std::uint32_t> kernels[] = {
        {Kernel::Tiled, 1}, {Kernel::Tiled, 3}, {Kernel::Rows, 1}, {Kernel::Rows, 4}, {Kernel::Naive, 0}};
    std::size_t i = 0;
    for (const auto& [kernel, splits] : kernels) {
        const auto [kq, vq] = formats[i % std::size(formats)];
        run_paged(ctx(), bt, {kernel, splits, DType::F32, std::nullopt, kModes[i % std::size(kModes)], kq, vq});
        ++i;
    }
}

// MQA at a head size of 4n + 2 (the rows kernel's PAIR_LOADS, the tiled kernel's padded quad)
// in fp16 storage, every ALiBi form in every kernel.
TEST_F(AttentionPaged, MqaOddHeadSizeInFp16MatchesInEveryKernel) {
    const Batch bt = make_batch({{3, 3}, {1, 50}, {17, 61}, {1, 1}}, 4, 1, 42, 5, DType::F16, DType::F16, 9500);
    for (const Mode& mode : kModes) {
        for (Kernel kernel : {Kernel::Tiled, Kernel::Rows, Kernel::Naive}) {
            run_paged(ctx(), bt, {kernel, kernel == Kernel::Tiled ? 2u : 0u, DType::F16, std::nullopt, mode});
        }
    }
}

// One decode row per sequence over a long capacity: the rows kernel's split lanes and the
// tiled kernel's splits spread each sequence's own keys (SPLIT_BY_LENGTH).
TEST_F(AttentionPaged, DecodeBatchesSplitEachSequencesKeys) {
    Batch bt = make_batch({{1, 1}, {1, 17}, {1, 211}, {1, 613}}, 6, 2, 64, 16, DType::F32, DType::F16, 9700);
    ASSERT_GE(bt.shape.kv_len, 512u);
    for (Kernel kernel : {Kernel::Rows, Kernel::Tiled}) {
        const AttentionPlan plan = run_paged(ctx(), bt, {kernel, 4, DType::F32, DType::F16, kModes[2]});
        EXPECT_GT(plan.n_splits, 1u) << plan.describe();
    }
}

// Devices with 4 storage buffers: the sequence table follows the slope table in the partials
// buffer (the kernels), or in the scores buffer (the naive op's scores pass).
TEST(AttentionPagedForcedLimits, PackedTablesStayRight) {
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("storage_buffers=4")));
    std::uint64_t seed = 9800;
    const Batch bt = make_batch(kRagged, 6, 2, 64, 5, DType::F32, DType::F32, seed);
    for (Kernel kernel : {Kernel::Tiled, Kernel::Rows}) {
        EXPECT_TRUE(run_paged(ctx, bt, {kernel, 0, DType::F32, std::nullopt, kModes[1]}).packed_tables);
    }
    run_paged(ctx, bt, {Kernel::Naive, 0, DType::F32, std::nullopt, kModes[2]});
    EXPECT_EQ(sink.validation_count(), 0u);
}

// A paged plan is the plan of the same shape unpaged: the grid, tiles, splits and the rows
// kernel's loop count (against the driver's loop limit) follow shape.q_len and shape.kv_len.
TEST(AttentionPagedPlans, FollowTheLongestSequenceAndTheCapacity) {
    ComputeLimits limits{.shared_memory = 32768,
                         .workgroup_invocations = 256,
                         .workgroup_size = {256, 256, 64},
                         .workgroup_count = {65535, 65535, 65535},
                         .storage_buffer_range = 1u << 30,
                         .storage_buffers = 8,
                         .subgroup_size = 8,
                         .max_loop_iterations = 100000};
    const PagedKv paged{.block_size = 16, .blocks_per_seq = 256, .q_rows = 40};
    const AttentionShape shape{5, 31, 4096, 6, 2, 64};
    for (const bool cpu : {false, true}) {
        const AttentionDevice device{.limits = limits, .cpu = cpu};
        const AttentionPlan flat = plan_attention(device, shape, {.external_kv_lens = true});
        const AttentionPlan pagedp = plan_attention(device, shape, {.paged = paged});
        EXPECT_EQ(pagedp.describe(), flat.describe());
        EXPECT_EQ(pagedp.loop_iterations, flat.loop_iterations);
        if (cpu) {
            EXPECT_LE(pagedp.loop_iterations, limits.max_loop_iterations / 2);
        }
    }
    EXPECT_NE(error_message([&] {
                  plan_attention(limits, {5, 31, 4000, 6, 2, 64}, {.paged = paged});
              }).find("blocks_per_seq 256 x block_size 16"),
              std::string::npos);
}

TEST(AttentionPagedTable, LayoutAndInconsistentInputs) {
    const std::vector<std::uint32_t> b0 = {7, 2}, b1 = {4};
    const PagedKv paged{.block_size = 5, .blocks_per_seq = 3, .q_rows = 9};
    std::vector<PagedSequence> seqs = {{.q_start = 4, .q_len = 3, .kv_len = 8, .blocks = b0},
                                       {.q_start = 0, .q_len = 1, .kv_len = 5, .blocks = b1}};
    const std::vector<std::uint32_t> expected = {8, 5, 4, 0, 3, 1, 7, 2, 0, 4, 0, 0};
    EXPECT_EQ(paged_sequence_table(seqs, paged), expected);
    EXPECT_EQ(paged_sequence_table_bytes(2, paged), 4u * expected.size());

    auto error_of = [&](std::vector<PagedSequence> s, PagedKv p) {
        return error_message([&] { paged_sequence_table(s, p); });
    };
    auto with = [&](std::size_t i, auto change) {
        auto s = seqs;
        change(s[i]);
        return s;
    };
    const std::vector<std::uint32_t> four = {1, 2, 3, 4}, none = {};
    EXPECT_NE(error_of({}, paged).find("at least one sequence"), std::string::npos);
    EXPECT_NE(error_of(seqs, {.block_size = 0, .blocks_per_seq = 3, .q_rows = 9}).find("at least 1"),
              std::string::npos);
    EXPECT_NE(error_of(with(0, [&](PagedSequence& s) { s.blocks = four; }), paged).find("more blocks than"),
              std::string::npos);
    EXPECT_NE(error_of(with(0, [&](PagedSequence& s) { s.blocks = none; }), paged).find("2 blocks of 5 keys needed"),
              std::string::npos);
    EXPECT_NE(error_of(with(1, [](PagedSequence& s) { s.q_len = 6; }), paged).find("q_len must be 1 .. kv_len"),
              std::string::npos);
    EXPECT_NE(error_of(with(1, [](PagedSequence& s) { s.q_len = 0; }), paged).find("q_len must be 1 .. kv_len"),
              std::string::npos);
    EXPECT_NE(error_of(with(0, [](PagedSequence& s) { s.kv_len = 16; }), paged).find("exceeds blocks_per_seq"),
              std::string::npos);
    EXPECT_NE(error_of(with(0, [](PagedSequence& s) { s.q_start = 7; }), paged).find("rows past q_rows 9"),
              std::string::npos);
    EXPECT_NE(error_of(with(1, [](PagedSequence& s) { s.q_start = 5; }), paged).find("overlap"), std::string::npos);
}

TEST_F(AttentionPaged, BadRangesAndOptionsAreRefused) {
    const Batch bt = make_batch({{2, 9}, {1, 4}}, 2, 1, 8, 4, DType::F32, DType::F32, 9900);
    const AttentionParams params = params_of(bt.shape, kModes[0]);
    const Attention op(ctx(), params, DType::F32,
                       AttentionOptions{.kernel = AttentionKernel::Tiled, .paged = bt.paged});
    const DeviceTensor q = upload_tensor(ctx(), bt.q, DType::F32, "Q");
    const DeviceTensor kv = upload_tensor(ctx(), bt.k, DType::F32, "K");
    const DeviceTensor table = upload_words(ctx(), bt.table, "table");
    const DeviceTensor short_q(ctx(), bt.q.size() - 8, DType::F32, "short Q");
    const DeviceTensor odd_kv(ctx(), bt.k.size() - 8, DType::F32, "odd K");
    const DeviceTensor short_table = upload_words(ctx(), std::span(bt.table).first(bt.table.size() - 1), "short");
    auto list = ctx().command_list();
    auto record = [&](const DeviceTensor& qt, const DeviceTensor& kt, BufferRange t) {
        return error_message([&] { op.record(*list, qt.range(), kt.range(), kt.range(), qt.range(), t); });
    };
    EXPECT_NE(record(q, kv, {}).find("got none"), std::string::npos);
    EXPECT_NE(record(q, kv, short_table.range()).find("sequence-table range"), std::string::npos);
    EXPECT_NE(record(short_q, kv, table.range()).find("paged Q range"), std::string::npos);
    EXPECT_NE(record(q, odd_kv, table.range()).find("not a whole number of blocks"), std::string::npos);
    EXPECT_NE(error_message([&] {
                  AttentionParams with_lens = params;
                  const std::uint32_t lens[] = {9, 4};
                  with_lens.kv_lens = lens;
                  Attention(ctx(), with_lens, DType::F32, AttentionOptions{.paged = bt.paged});
              }).find("either from params.kv_lens"),
              std::string::npos);
    const NaiveAttention naive(ctx(), params, DType::F32, bt.paged);
    EXPECT_NE(error_message([&] {
                  naive.record(*list, q.range(), kv.range(), kv.range(), q.range());
              }).find("no sequence table"),
              std::string::npos);
}

}  // namespace
}  // namespace vkf::test
