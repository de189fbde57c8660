// Tiled ALiBi attention against the double-precision CPU reference over a grid of shapes
// and modes: seeded random inputs, outputs poisoned before every run, in fp32, fp16, and fp32
// Q/O over an fp16 K/V cache. The other attention suites: test_attention_kernels (head sizes,
// each kernel, split-KV), test_attention_limits (forced device limits), test_attention_plans
// (the planner and bad input). Quantized K/V caches (q8_0, q4_0) run over the grid too.

#include "tests/ops/attention_cases.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vkf::test {
namespace {

// A deterministic walk over the grid: every length, head count, GQA ratio, batch,
// mode and dtype appears, without the full cross product (CI has 2 cores).
std::vector<Case> grid(bool quick) {
    const std::uint32_t lens[] = {1, 2, 7, 63, 64, 65, 127, 129, 257, 1000, 2048};
    const std::uint32_t heads[] = {1, 3, 8, 12, 16, 20, 32};
    const std::uint32_t dims[] = {32, 64, 80, 96, 128, 256};
    const std::uint32_t ratios[] = {1, 2, 4, 0};  // 0: MQA
    std::vector<Case> cases;
    std::uint32_t n = 0;
    for (std::uint32_t qi = 0; qi < std::size(lens); ++qi) {
        for (std::uint32_t ki = 0; ki < std::size(lens); ++ki) {
            const std::uint32_t q_len = lens[qi], kv_len = lens[ki];
            if ((qi + 2 * ki) % 3 != 0 && !(q_len == 1 || q_len == kv_len)) {
                continue;  // thin the cross product, keep decode and square shapes
            }
            const std::uint32_t step = n++;
            std::uint32_t n_head = heads[step % std::size(heads)];
            const std::uint32_t ratio = ratios[step % std::size(ratios)];
            std::uint32_t n_kv_head = ratio == 0 ? 1 : n_head / ratio;
            if (n_kv_head == 0 || n_head % n_kv_head != 0)
                n_kv_head = n_head;
            const std::uint32_t head_dim = dims[(step / 2) % std::size(dims)];
            std::uint32_t batch = 1 + step % 3;
            // Keep each case's work bounded for CI.
            const std::uint64_t work = std::uint64_t{q_len} * kv_len * n_head * batch * head_dim;
            const std::uint64_t budget = quick ? (1ull << 26) : (1ull << 29);
            while (work / (batch > 1 ? 1 : 1) > budget && n_head > 1) {
                n_head = n_head / 2 ? n_head / 2 : 1;
                n_kv_head = std::min(n_kv_head, n_head);
                while (n_head % n_kv_head != 0)
                    --n_kv_head;
                if (std::uint64_t{q_len} * kv_len * n_head * batch * head_dim <= budget)
                    break;
            }
            while (std::uint64_t{q_len} * kv_len * n_head * batch * head_dim > budget && batch > 1)
                --batch;
            // Lavapipe on 2 cores runs ~0.1-1 GFLOP/s: the largest shapes keep a small head
            // (every head size has its own test in test_attention_kernels.cpp).
            std::uint32_t dim = head_dim;
            while (std::uint64_t{q_len} * kv_len * n_head * batch * dim > budget && dim > 32)
                dim = dim > 64 ? 64 : 32;
            cases.push_back(Case{
                .batch = batch,
                .q_len = q_len,
                .kv_len = kv_len,
                .n_head = n_head,
                .n_kv_head = n_kv_head,
                .head_dim = dim,
                .mask = step % 4 == 3 ? MaskMode::None : MaskMode::Causal,
                .alibi = step % 5 == 4 ? AlibiMode::Off : (step % 5 == 2 ? AlibiMode::Symmetric : AlibiMode::Causal),
                .dtype = step % 2 == 0 ? DType::F32 : DType::F16,
                .slope_table = step % 7 == 3,
                .kv_lens = step % 6 == 5,
                .max_bias = step % 9 == 8 ? 16.0f : 8.0f});
        }
    }
    return cases;
}

bool quick_mode() {
    const char* q = std::getenv("VKF_TEST_QUICK");
    return q != nullptr && std::strcmp(q, "1") == 0;
}

TEST_F(Attention_, MatchesTheReferenceOverTheShapeGrid) {
    std::uint64_t seed = 1000;
    const auto cases = grid(quick_mode());
    for (const Case& c : cases) {
        run_case(ctx(), c, seed += 10);
        if (HasFatalFailure())
            return;
    }
    std::printf("%zu grid cases\n", cases.size());
}

// The grid's shapes again, with fp32 Q/O over an fp16 K/V cache (a model session's storage).
TEST_F(Attention_, Fp16KvMatchesTheReferenceOverTheShapeGrid) {
    std::uint64_t seed = 1500;
    const auto cases = grid(quick_mode());
    for (const Case& c : cases) {
        run_case(ctx(), with_f16_kv(c), seed += 10);
        if (HasFatalFailure())
            return;
    }
    std::printf("%zu grid cases with an fp16 K/V cache\n", cases.size());
}

// The grid's shapes over quantized K/V caches (q8_0, q4_0, K and V apart; head sizes rounded
// up to 32n), measured against the reference on the dequantized K and V: the kernels' own
// error stays within the fp32 bound. The default run takes every seventh case in one storage
// each; the full run (test_attention_full) every case in every quantized storage.
void run_quantized_grid(Context& ctx, bool every_case) {
    std::uint64_t seed = 2500;
    const auto cases = grid(quick_mode());
    std::size_t ran = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        for (std::size_t s = 0; s < std::size(kQuantStorages); ++s) {
            if (every_case || (i % 7 == 0 && s == (i / 7) % std::size(kQuantStorages))) {
                run_case(ctx, in(kQuantStorages[s], cases[i]), seed += 10);
                ++ran;
                if (::testing::Test::HasFatalFailure())
                    return;
            }
        }
    }
    std::printf("%zu grid cases over quantized K/V caches\n", ran);
}

TEST_F(Attention_, QuantizedKvMatchesTheReferenceOverPartOfTheGrid) {
    run_quantized_grid(ctx(), false);
}

TEST_F(Attention_, QuantizedKvMatchesTheReferenceOverTheShapeGrid) {
    run_quantized_grid(ctx(), true);
}

}  // namespace
}  // namespace vkf::test
