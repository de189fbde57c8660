// Threads (docs/DESIGN.md "Threads"): two Sessions on one Model driven from two threads at
// once, and two Contexts created and used in two threads at once, give exactly the logits
// of single-threaded runs. The sessions of a thread pair differ (fused and unfused, staged
// transfers or not) so that both threads create pipelines, buffers and command lists, submit
// and wait at the same time. The validation layer checks Vulkan's external synchronization
// (a queue used from two threads at once is a threading error); ThreadSanitizer (VKF_TSAN,
// scripts/tsan.sh) checks vkformer's own locking.

#include "host/model/session.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

#include <barrier>
#include <exception>
#include <thread>

namespace vkf::test {
namespace {

// A random small BLOOM checkpoint (fp16 weights) in a fresh temp directory.
class SmallBloom {
public:
    SmallBloom() { write_random_checkpoint(dir_.path(), small_bloom(), 7, DType::F16); }
    const std::filesystem::path& dir() const { return dir_.path(); }

private:
    TempDir dir_{"vkf_test_model_threads"};
};

// What one thread runs: a prompt of its own, then greedy decoding.
struct Job {
    std::uint64_t seed;  // of the prompt
    bool fused;          // SessionOptions::fuse_qkv and fuse_layernorm
};

constexpr std::uint32_t kPrompt = 20, kDecodeSteps = 6;

// Every forward call's logits, concatenated, for a prefill and greedy decode steps.
std::vector<float> run_job(const Model& model, const Job& job) {
    Session session(
        model,
        SessionOptions{
            .max_tokens = kPrompt + kDecodeSteps, .chunk = 8, .fuse_qkv = job.fused, .fuse_layernorm = job.fused});
    std::vector<float> out = session.forward(random_token_ids(kPrompt, small_bloom().vocab_size, job.seed));
    for (std::uint32_t i = 0; i < kDecodeSteps; ++i) {
        const std::span<const float> last(out.end() - small_bloom().vocab_size, out.end());
        const auto next = static_cast<std::uint32_t>(std::max_element(last.begin(), last.end()) - last.begin());
        const std::vector<float> row = session.forward(std::span(&next, 1));
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

// Runs `body(i)` for i = 0 .. n-1 in n threads started together; rethrows the first error.
void in_threads(std::size_t n, const std::function<void(std::size_t)>& body) {
    std::barrier start(static_cast<std::ptrdiff_t>(n));
    std::vector<std::exception_ptr> errors(n);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            start.arrive_and_wait();
            try {
                body(i);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    for (const std::exception_ptr& e : errors) {
        if (e) {
            std::rethrow_exception(e);
        }
    }
}

const Job kJobs[] = {{.seed = 3, .fused = true}, {.seed = 4, .fused = false}};
constexpr int kRounds = 2;  // each thread runs its job this many times

// The logits of each job, one at a time, on a context of its own.
std::vector<std::vector<float>> single_threaded(const std::filesystem::path& dir, MessageSink& sink) {
    Context ctx(test_options(sink));
    const Model model(ctx, dir);
    std::vector<std::vector<float>> out;
    for (const Job& job : kJobs) {
        out.push_back(run_job(model, job));
    }
    return out;
}

class Threads : public ::testing::TestWithParam<bool> {};

TEST_P(Threads, TwoSessionsOnOneModelFromTwoThreads) {
    const SmallBloom files;
    MessageSink sink;
    const std::vector<std::vector<float>> expected = single_threaded(files.dir(), sink);
    {
        // A fresh context: pipelines are created while both threads run.
        ContextOptions options = test_options(sink);
        options.force_staging = GetParam();  // transfers through the shared staging buffer
        Context ctx(options);
        const Model model(ctx, files.dir());
        const std::uint32_t model_buffers = ctx.memory_stats().buffer_count;
        std::vector<std::vector<std::vector<float>>> got(2);
        in_threads(2, [&](std::size_t t) {
            for (int round = 0; round < kRounds; ++round) {
                got[t].push_back(run_job(model, kJobs[t]));
            }
        });
        for (std::size_t t = 0; t < 2; ++t) {
            for (int round = 0; round < kRounds; ++round) {
                EXPECT_EQ(got[t][round], expected[t]) << "thread " << t << ", round " << round;
            }
        }
        EXPECT_EQ(ctx.memory_stats().buffer_count, model_buffers) << "the sessions left buffers behind";
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(MappedAndStaged, Threads, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Staged" : "Mapped"; });

TEST(ThreadsContexts, TwoContextsFromTwoThreads) {
    // Each thread creates its context (instance, device, pipelines) at the same time as the
    // other, loads the model and runs its job.
    const SmallBloom files;
    MessageSink sink;
    const std::vector<std::vector<float>> expected = single_threaded(files.dir(), sink);
    std::vector<std::vector<std::vector<float>>> got(2);
    in_threads(2, [&](std::size_t t) {
        for (int round = 0; round < kRounds; ++round) {
            Context ctx(test_options(sink));
            const Model model(ctx, files.dir());
            got[t].push_back(run_job(model, kJobs[t]));
        }
    });
    for (std::size_t t = 0; t < 2; ++t) {
        for (int round = 0; round < kRounds; ++round) {
            EXPECT_EQ(got[t][round], expected[t]) << "thread " << t << ", round " << round;
        }
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
