// Device faults in the middle of real work, injected on purpose (Context::inject_faults) or
// forced with a tiny timeout:
// - out of device memory at the N-th device-memory request (vkCreateBuffer or
//   vkAllocateMemory), for every N until the operation succeeds, during a model load and
//   during a session's creation, prefill and decoding: each failure is an OutOfMemoryError
//   naming the buffer and its size, everything allocated is released (MemoryStats back to
//   the baseline), the Context runs a small op correctly afterwards, a session that failed
//   runs the whole sequence correctly once memory is back, and the validation layer reports
//   nothing, also at the Context's destruction; the same with a forced small device-local
//   heap, where a failed device-local block falls back to host-visible memory;
// - a lost device (the N-th fence wait reports VK_ERROR_DEVICE_LOST while the work still
//   runs) and a real timeout during a forward pass: DeviceLostError, later submissions
//   refused, Session, Model and Context destroyed without a crash or a validation message
//   although the GPU was still running their work, and a fresh Context in the same process
//   computing the same logits.

#include "host/model/session.hpp"
#include "host/ops/elementwise.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace vkf::test {
namespace {

// A random small BLOOM checkpoint (fp16 weights) in a fresh temp directory.
class SmallBloom {
public:
    SmallBloom() { write_random_checkpoint(dir_.path(), small_bloom(), 7, DType::F16); }
    const std::filesystem::path& dir() const { return dir_.path(); }

private:
    TempDir dir_{"vkf_test_model_faults"};
};

constexpr std::uint32_t kPrompt = 24, kDecodeSteps = 3;

// Logits of a prefill of kPrompt tokens and kDecodeSteps greedy-free decode steps (fixed ids),
// one row per forward call, concatenated.
std::vector<float> run_sequence(Session& session) {
    const std::vector<std::uint32_t> prompt = random_token_ids(kPrompt, small_bloom().vocab_size, 3);
    std::vector<float> out = session.forward(prompt);
    for (std::uint32_t i = 0; i < kDecodeSteps; ++i) {
        const std::uint32_t id = (17 * i + 5) % small_bloom().vocab_size;
        const std::vector<float> row = session.forward(std::span(&id, 1));
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

SessionOptions session_options(bool fused) {
    // Prompt chunks of 16: the prefill takes two submissions of different sizes.
    return SessionOptions{
        .max_tokens = kPrompt + kDecodeSteps, .chunk = 16, .fuse_qkv = fused, .fuse_layernorm = fused};
}

double max_relative_difference(std::span<const float> a, std::span<const float> b) {
    double worst = a.size() == b.size() ? 0.0 : INFINITY;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        const double scale = std::max(1.0, static_cast<double>(std::fabs(b[i])));
        worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / scale);
    }
    return worst;
}

// The context still computes: a + b over 1000 floats on the device, checked on the host.
void expect_context_works(Context& ctx) {
    SCOPED_TRACE("a small op after the failure");
    constexpr std::uint32_t n = 1000;
    std::vector<float> a(n), b(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        a[i] = static_cast<float>(i) * 0.5f;
        b[i] = 3.0f - static_cast<float>(i);
    }
    Buffer da = ctx.create_buffer(n * 4, MemoryKind::Device, "a");
    Buffer db = ctx.create_buffer(n * 4, MemoryKind::Device, "b");
    Buffer sum = ctx.create_buffer(n * 4, MemoryKind::Device, "a + b");
    ctx.upload(da, std::span<const float>(a));
    ctx.upload(db, std::span<const float>(b));
    auto list = ctx.command_list();
    record_add(ctx, *list, whole(da), whole(db), whole(sum));
    ctx.submit(*list);
    std::vector<float> back(n);
    ctx.download(sum, std::span(back));
    for (std::uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(back[i], a[i] + b[i]) << "element " << i;
    }
}

// Everything but the first fallback's note, which stays once set.
void expect_same_memory(const MemoryStats& now, const MemoryStats& baseline) {
    EXPECT_EQ(now.buffer_count, baseline.buffer_count);
    EXPECT_EQ(now.buffer_bytes, baseline.buffer_bytes);
    EXPECT_EQ(now.block_count, baseline.block_count);
    EXPECT_EQ(now.block_bytes, baseline.block_bytes);
    EXPECT_EQ(now.device_local_block_bytes, baseline.device_local_block_bytes);
    EXPECT_EQ(now.fallback_block_bytes, baseline.fallback_block_bytes);
    EXPECT_EQ(now.fallback_buffer_count, baseline.fallback_buffer_count);
    EXPECT_EQ(now.fallback_buffer_bytes, baseline.fallback_buffer_bytes);
}

// An out-of-memory message names the buffer in quotes and then its size in bytes:
// "out of device memory: ... buffer 'NAME' (X MiB (N bytes))" or "... buffer 'NAME' needs X MiB
// (N bytes)", a forced size's. (Parsed by hand: std::regex
// trips GCC 12's -Wmaybe-uninitialized under the sanitizers.)
void expect_names_buffer(const std::string& message) {
    const std::size_t start = message.find("out of device memory: ");
    const std::size_t name = message.find("buffer '", start);
    const std::size_t end = message.find('\'', name == std::string::npos ? 0 : name + 8);
    ASSERT_TRUE(start != std::string::npos && name != std::string::npos && end != std::string::npos) << message;
    EXPECT_GT(end, name + 8) << "empty buffer name: " << message;
    const std::size_t size = message.find(" MiB (", end);
    const std::size_t bytes = message.find(" bytes))", size);
    const bool sized = message.compare(end, 3, "' (") == 0 || message.compare(end, 8, "' needs ") == 0;
    ASSERT_TRUE(sized && size != std::string::npos && bytes != std::string::npos) << message;
    const std::string digits = message.substr(size + 6, bytes - size - 6);
    EXPECT_TRUE(!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos) << message;
}

struct SweepResult {
    std::uint32_t failures = 0;  // requests at which the operation failed
    std::vector<std::string> buffers;
};

// Runs `operation` with the N-th device-memory request from its start failing, and every
// one after it, for N = 0, 1, ... until it succeeds. After each failure: the message, no
// buffer or block left over (once `after_failure`, which may check more, has run; unless
// !same_memory: what the operation keeps may stay), the context usable.
SweepResult sweep_allocation_faults(Context& ctx, const std::function<void()>& operation,
                                    const std::function<void()>& after_failure = {}, bool same_memory = true) {
    const MemoryStats baseline = ctx.memory_stats();
    SweepResult result;
    for (std::uint64_t n = 0;; ++n) {
        SCOPED_TRACE("device-memory request " + std::to_string(n) + " fails");
        ctx.inject_faults(FaultInjection{.allocations = AllocationFaults{.after = n}});
        bool failed = false;
        try {
            operation();
        } catch (const OutOfMemoryError& e) {
            failed = true;
            expect_names_buffer(e.what());
            const std::string message = e.what();
            const std::size_t quote = message.find("buffer '") + 8;
            result.buffers.push_back(message.substr(quote, message.find('\'', quote) - quote));
        }
        ctx.inject_faults({});
        if (!failed) {
            break;
        }
        ++result.failures;
        if (after_failure) {
            after_failure();
        }
        if (same_memory) {
            expect_same_memory(ctx.memory_stats(), baseline);
        }
        expect_context_works(ctx);
        if (::testing::Test::HasFatalFailure() || n > 1000) {
            ADD_FAILURE() << "stopping the sweep";
            break;
        }
    }
    std::printf("%u fault positions failed the operation (OutOfMemoryError), the next one succeeded\n",
                result.failures);
    return result;
}

TEST(ModelFaults, OutOfDeviceMemoryWhileLoadingAModel) {
    const SmallBloom files;
    MessageSink sink;
    {
        Context ctx(test_options(sink));
        // Blocks kept for reuse belong to the baseline: a load and its release first.
        { const Model warm(ctx, files.dir()); }
        const SweepResult r = sweep_allocation_faults(ctx, [&] { const Model model(ctx, files.dir()); });
        // Every weight is a buffer of its own: at least one failure per tensor.
        EXPECT_GE(r.failures, 2u + 12u * small_bloom().n_layer) << "too few requests failed";
        EXPECT_NE(std::find(r.buffers.begin(), r.buffers.end(), "word_embeddings.weight"), r.buffers.end())
            << "no failure named the embedding";
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    EXPECT_EQ(sink.validation_count(), 0u) << "validation spoke at the context's destruction";
}

class SessionFaults : public ::testing::TestWithParam<bool> {};

TEST_P(SessionFaults, OutOfDeviceMemoryInASessionsPrefillAndDecoding) {
    const bool fused = GetParam();
    const SmallBloom files;
    MessageSink sink;
    {
        Context ctx(test_options(sink));
        const Model model(ctx, files.dir());
        std::vector<float> expected;
        {
            Session warm(model, session_options(fused));
            expected = run_sequence(warm);
        }
        // The session lives outside the operation: after a failure in a forward pass, it runs
        // the whole sequence again from the start and must give the same logits (a failure
        // must not leave recorded steps bound to buffers it replaced).
        std::optional<Session> session;
        const SweepResult r = sweep_allocation_faults(
            ctx,
            [&] {
                session.reset();
                session.emplace(model, session_options(fused));
                const std::vector<float> got = run_sequence(*session);
                EXPECT_LT(max_relative_difference(got, expected), 1e-6);
            },
            [&] {
                if (session) {
                    session->reset();
                    EXPECT_LT(max_relative_difference(run_sequence(*session), expected), 1e-6)
                        << "the session that failed computes wrongly afterwards";
                }
                session.reset();
            });
        session.reset();
        EXPECT_GE(r.failures, 10u) << "too few requests failed";
        for (const char* name : {"hidden", "logits"}) {
            EXPECT_NE(std::find(r.buffers.begin(), r.buffers.end(), name), r.buffers.end())
                << "no failure named '" << name << "'";
        }
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    EXPECT_EQ(sink.validation_count(), 0u) << "validation spoke at the context's destruction";
}

INSTANTIATE_TEST_SUITE_P(FusedAndUnfused, SessionFaults, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Fused" : "Unfused"; });

TEST(ModelFaults, ASessionThatFailedToGrowItsBuffersComputesCorrectlyAfterwards) {
    // 2 tokens with the last logits, then 4 with all of them: the second call needs a larger
    // matmul scratch (split K, on lavapipe for 2 to 8 rows) and a larger logits buffer. When
    // the scratch has been replaced and the logits fail, the steps recorded with the old
    // scratch must go too, or a later 2-token call submits a list bound to a freed buffer.
    const SmallBloom files;
    MessageSink sink;
    {
        Context ctx(test_options(sink));
        const Model model(ctx, files.dir());
        const std::vector<std::uint32_t> two = {5, 7}, four = {11, 13, 17, 19};
        const auto run = [&](Session& session) {
            std::vector<float> out = session.forward(two);
            const std::vector<float> all = session.forward(four, Session::Logits::All);
            out.insert(out.end(), all.begin(), all.end());
            return out;
        };
        std::vector<float> expected;
        {
            Session warm(model, session_options(true));
            expected = run(warm);
        }
        // A new session each time, which the failure leaves with what it grew before.
        std::optional<Session> session;
        const SweepResult r = sweep_allocation_faults(
            ctx,
            [&] {
                session.reset();
                session.emplace(model, session_options(true));
                session->forward(two);
                session->forward(four, Session::Logits::All);
            },
            [&] {
                if (session) {
                    session->reset();
                    EXPECT_LT(max_relative_difference(run(*session), expected), 1e-6);
                }
                session.reset();
            });
        EXPECT_GE(r.failures, 1u);
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    EXPECT_EQ(sink.validation_count(), 0u) << "validation spoke at the context's destruction";
}

TEST(ModelFaults, OutOfDeviceMemoryWithASmallDeviceLocalHeap) {
    // 1 MiB of device-local memory for 1.9 MiB of fp16 weights: the rest in host-visible
    // memory, as on a small GPU. Both kinds of blocks fail in the sweep.
    const SmallBloom files;
    MessageSink sink;
    {
        Context ctx(test_options(sink, LimitOverrides::parse("device_heap=1M")));
        {
            // First, one failed device-local block (the driver's out-of-memory, not the forced
            // size; request 0 is the vkCreateBuffer): the buffer goes to host-visible memory.
            ctx.inject_faults(FaultInjection{.allocations = AllocationFaults{.after = 1, .count = 1}});
            const Buffer first = ctx.create_buffer(160 << 10, MemoryKind::Device, "first after the fault");
            ctx.inject_faults({});
            EXPECT_TRUE(first.host_visible_fallback());
            const std::string note = ctx.memory_stats().note;
            EXPECT_NE(note.find("vkAllocateMemory of a block there failed for lack of memory"), std::string::npos)
                << note;
            EXPECT_NE(note.find("'first after the fault'"), std::string::npos) << note;
            expect_context_works(ctx);
        }
        std::vector<float> expected;
        {
            const Model warm(ctx, files.dir());
            Session session(warm, session_options(true));
            expected = run_sequence(session);
            EXPECT_GT(ctx.memory_stats().fallback_buffer_count, 0u) << "nothing fell back; the heap is too large";
        }
        const SweepResult r = sweep_allocation_faults(ctx, [&] {
            const Model model(ctx, files.dir());
            Session session(model, session_options(true));
            EXPECT_LT(max_relative_difference(run_sequence(session), expected), 1e-6);
        });
        EXPECT_GE(r.failures, 10u);

        expect_context_works(ctx);
        EXPECT_EQ(sink.validation_count(), 0u);
    }
    EXPECT_EQ(sink.validation_count(), 0u) << "validation spoke at the context's destruction";
}

TEST(ModelFaults, ABufferThatCannotBeCreatedIsNamed) {
    MessageSink sink;
    Context ctx(test_options(sink));
    expect_context_works(ctx);  // its blocks, kept for reuse, belong to the baseline
    const MemoryStats baseline = ctx.memory_stats();
    ctx.inject_faults(FaultInjection{.allocations = AllocationFaults{.after = 0, .count = 1}});
    const std::string message =
        error_message([&] { ctx.create_buffer(12345, MemoryKind::Device, "the named buffer"); });
    EXPECT_NE(message.find("vkCreateBuffer for buffer 'the named buffer' (0.0 MiB (12345 bytes)) failed with "
                           "VK_ERROR_OUT_OF_DEVICE_MEMORY"),
              std::string::npos)
        << message;
    expect_same_memory(ctx.memory_stats(), baseline);
    expect_context_works(ctx);
    // A block that cannot be allocated, with nothing to fall back to: named, with the size.
    ctx.inject_faults(FaultInjection{.allocations = AllocationFaults{.after = 1}});
    const std::string block = error_message([&] { ctx.create_buffer(100 << 20, MemoryKind::Device, "huge"); });
    EXPECT_NE(block.find("buffer 'huge' (100.0 MiB (104857600 bytes)): allocating a block of"), std::string::npos)
        << block;
    ctx.inject_faults({});
    expect_same_memory(ctx.memory_stats(), baseline);
    EXPECT_EQ(sink.validation_count(), 0u);
}

// --- lost devices and timeouts --------------------------------------------------------------

// The logits of the sequence on a fresh context: what every context should compute.
std::vector<float> fresh_context_logits(const std::filesystem::path& dir, MessageSink& sink) {
    Context ctx(test_options(sink));
    const Model model(ctx, dir);
    Session session(model, session_options(true));
    return run_sequence(session);
}

TEST(ModelFaults, ADeviceLostInEveryWaitOfAForwardPass) {
    // force_staging: uploads and downloads are submissions too, and their waits are swept.
    const SmallBloom files;
    MessageSink sink;
    const std::vector<float> expected = fresh_context_logits(files.dir(), sink);
    TempDir cache("vkf_test_model_faults_cache");  // pipelines compiled once for the sweep
    std::uint32_t losses = 0;
    for (std::uint64_t k = 0;; ++k) {
        SCOPED_TRACE("the device is lost at wait " + std::to_string(k) + " of the session");
        bool lost = false;
        {
            ContextOptions options = test_options(sink);
            options.force_staging = true;
            options.pipeline_cache_dir = cache.path();
            Context ctx(options);
            const Model model(ctx, files.dir());
            Session session(model, session_options(true));
            ctx.inject_faults(FaultInjection{.lose_device_after_waits = k});
            try {
                EXPECT_LT(max_relative_difference(run_sequence(session), expected), 1e-6);
            } catch (const DeviceLostError& e) {
                lost = true;
                EXPECT_NE(std::string(e.what()).find("VK_ERROR_DEVICE_LOST"), std::string::npos) << e.what();
                EXPECT_TRUE(ctx.lost());
                // Nothing more is submitted, by the session or anyone else.
                session.reset();
                const std::string again = error_message([&] { session.forward(std::vector<std::uint32_t>{1}); });
                EXPECT_NE(again.find("timed out or was lost earlier"), std::string::npos) << again;
                EXPECT_THROW(expect_context_works(ctx), DeviceLostError);
            }
            // Session, model and context go now, while the GPU may still run the work.
        }
        EXPECT_EQ(sink.validation_count(), 0u);
        if (!lost || HasFatalFailure() || k > 200) {
            break;
        }
        ++losses;
    }
    // Per decoding step: the token id, the key count, the forward pass and the logits; more
    // for the prefill.
    EXPECT_GE(losses, 4u * (1 + kDecodeSteps));
    std::printf("the device was lost at each of %u waits, then the sequence ran\n", losses);
    EXPECT_LT(max_relative_difference(fresh_context_logits(files.dir(), sink), expected), 1e-6)
        << "a fresh context after the faults computes differently";
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(ModelFaults, DestructionWaitsForWorkThatTimedOut) {
    // The loss reported at the first wait of a forward pass while the pass runs on: the
    // session's buffers and command lists are released after the device is idle.
    const SmallBloom files;
    MessageSink sink;
    const std::vector<float> expected = fresh_context_logits(files.dir(), sink);
    {
        Context ctx(test_options(sink));
        const Model model(ctx, files.dir());
        {
            Session session(model, session_options(true));
            ctx.inject_faults(FaultInjection{.lose_device_after_waits = 0});
            EXPECT_THROW(run_sequence(session), DeviceLostError);
        }
        EXPECT_GT(ctx.device().deferred_releases(), 0u) << "the session's objects were destroyed at once";
        // The work may still use any buffer: no data moves either, mapped or staged.
        const Buffer buffer = ctx.create_buffer(16, MemoryKind::Device, "after the loss");
        std::vector<std::uint32_t> words(4);
        EXPECT_THROW(ctx.upload(buffer, std::span<const std::uint32_t>(words)), DeviceLostError);
        EXPECT_THROW(ctx.download(buffer, std::span(words)), DeviceLostError);
        EXPECT_THROW(Session(model, session_options(true)).forward(std::vector<std::uint32_t>{1}), DeviceLostError);
    }
    EXPECT_EQ(sink.validation_count(), 0u);
    EXPECT_LT(max_relative_difference(fresh_context_logits(files.dir(), sink), expected), 1e-6);
}

TEST(ModelFaults, ARealTimeoutInAForwardPass) {
    // A 1 ms timeout: the prefill of a 256-token prompt takes far longer on any device.
    const SmallBloom files;
    MessageSink sink;
    const std::vector<float> expected = fresh_context_logits(files.dir(), sink);
    bool timed_out = false;
    {
        ContextOptions options = test_options(sink);
        options.timeout = std::chrono::milliseconds(1);
        Context ctx(options);
        const Model model(ctx, files.dir());
        Session session(model, SessionOptions{.max_tokens = 256, .chunk = 256});
        try {
            session.forward(random_token_ids(256, small_bloom().vocab_size, 5));
        } catch (const DeviceLostError& e) {
            timed_out = true;
            EXPECT_NE(std::string(e.what()).find("did not finish within 1 ms"), std::string::npos) << e.what();
            EXPECT_TRUE(ctx.lost());
        }
    }
    if (!timed_out) {
        GTEST_SKIP() << "a 256-token prefill finished within 1 ms on this device";
    }
    EXPECT_EQ(sink.validation_count(), 0u);
    EXPECT_LT(max_relative_difference(fresh_context_logits(files.dir(), sink), expected), 1e-6);
}

TEST(ModelFaults, TimeoutsOutOfRangeAreRefused) {
    MessageSink sink;
    for (const auto ms : {std::chrono::milliseconds(0), kMaxTimeout + std::chrono::milliseconds(1)}) {
        ContextOptions options = test_options(sink);
        options.timeout = ms;
        const std::string message = error_message([&] { Context ctx(options); });
        EXPECT_NE(message.find("ContextOptions::timeout of " + std::to_string(ms.count()) + " ms is out of range"),
                  std::string::npos)
            << message;
    }
}

}  // namespace
}  // namespace vkf::test
