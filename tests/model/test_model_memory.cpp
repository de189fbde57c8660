// The memory a model needs (host/model/memory_estimate.hpp): the estimate against what Model
// and Session allocate; a model over a forced memory budget (VKF_LIMITS device_heap and
// host_heap) refused before anything is uploaded, with the numbers in the message; and a
// model loaded partly into host-visible memory (a forced tiny device-local heap) giving the
// double-precision reference's logits.

#include "host/model/session.hpp"
#include "host/reference/model.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/compare.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/vulkan_test.hpp"

namespace vkf::test {
namespace {

// A random small BLOOM checkpoint (fp32: 7.3 MiB of weights) in a fresh temp directory.
class SmallBloom {
public:
    explicit SmallBloom(DType dtype) { write_random_checkpoint(dir_.path(), small_bloom(), 7, dtype); }
    const std::filesystem::path& dir() const { return dir_.path(); }

private:
    TempDir dir_{"vkf_test_model_memory"};
};

class ModelMemory : public VulkanTest {};

TEST_F(ModelMemory, TheEstimateIsWhatModelAndSessionAllocate) {
    const SmallBloom files(DType::F16);
    const Model model(ctx(), files.dir());
    const ModelConfig& c = model.config();
    EXPECT_EQ(model.weights().bytes, weight_bytes(c, model.weight_format()));

    const SessionSize size{.max_tokens = 40, .chunk = 16, .kv_dtype = DType::F16};
    const ModelMemoryEstimate e = estimate_session_memory(c, size);
    EXPECT_EQ(e.weights, 0u);
    EXPECT_EQ(e.kv_cache, 2ull * c.n_layer * 48 * c.hidden * 2);  // 40 tokens in 3 blocks of 16
    EXPECT_EQ(estimate_model_memory(c, model.weight_format(), size).total(), model.weights().bytes + e.total());
    // Before any forward pass a session holds one row of logits and no rows gathered for the
    // head; the estimate counts a row of each per token of a chunk (Logits::All), and nothing
    // else differs from an unfused session. A fused one has no QKV output buffer: the
    // estimate is an upper bound.
    const Session unfused(
        model, SessionOptions{
                   .max_tokens = 40, .chunk = 16, .fuse_qkv = false, .fuse_layernorm = false, .kv_dtype = DType::F16});
    EXPECT_EQ(e.total() - unfused.device_bytes(), 15ull * c.vocab_size * 4 + 16ull * c.hidden * 4);
    const Session fused(model, SessionOptions{.max_tokens = 40, .chunk = 16, .kv_dtype = DType::F16});
    EXPECT_GE(e.total(), fused.device_bytes());
}

// A quantized K/V cache (q8_0 K, q4_0 V) is counted exactly: its key rows with their scales
// (8 heads of 32: 34 and 18 bytes a head against fp16's 64), and a session over it, whose QKV
// projection does not scatter, allocates what the estimate says but for the head's rows.
TEST_F(ModelMemory, TheEstimateCountsAQuantizedKvCacheExactly) {
    const SmallBloom files(DType::F16);
    const Model model(ctx(), files.dir());
    const ModelConfig& c = model.config();
    const SessionSize size{.max_tokens = 40,
                           .chunk = 16,
                           .kv_dtype = DType::F16,
                           .kv_k_quant = QuantFormat::Q8_0,
                           .kv_v_quant = QuantFormat::Q4_0};
    const ModelMemoryEstimate e = estimate_session_memory(c, size);
    EXPECT_EQ(e.kv_cache, std::uint64_t{c.n_layer} * 48 * c.n_kv_head * (34 + 18));
    const Session session(model, SessionOptions{.max_tokens = 40,
                                                .chunk = 16,
                                                .kv_dtype = DType::F16,
                                                .kv_k_quant = QuantFormat::Q8_0,
                                                .kv_v_quant = QuantFormat::Q4_0});
    EXPECT_EQ(e.total() - session.device_bytes(), 15ull * c.vocab_size * 4 + 16ull * c.hidden * 4);
    // fp32 for the side not quantized: refused.
    EXPECT_THROW(
        Session(model, SessionOptions{.max_tokens = 8, .kv_dtype = DType::F32, .kv_k_quant = QuantFormat::Q8_0}),
        Error);
}

// A Batch of several sequences (vkf-server's): its whole pool of blocks and one block table per
// sequence, as batch_session_size tells the estimate; as above but for the head's rows.
TEST_F(ModelMemory, TheEstimateIsWhatABatchOfSequencesAllocates) {
    const SmallBloom files(DType::F16);
    const Model model(ctx(), files.dir());
    const ModelConfig& c = model.config();
    const BatchOptions options{.max_tokens = 70,
                               .max_sequence_tokens = 20,
                               .max_sequences = 3,
                               .chunk = 16,
                               .fuse_qkv = false,
                               .fuse_layernorm = false};
    const SessionSize size = batch_session_size(c, options);
    EXPECT_EQ(size.max_tokens, 70u);
    EXPECT_EQ(size.sequence_blocks, 2u);  // 20 tokens in blocks of 16
    const ModelMemoryEstimate e = estimate_session_memory(c, size);
    EXPECT_EQ(e.kv_cache, 2ull * c.n_layer * 80 * c.hidden * 2);  // 70 tokens in 5 blocks
    const Batch batch(model, options);
    EXPECT_EQ(e.total() - batch.device_bytes(), 15ull * c.vocab_size * 4 + 16ull * c.hidden * 4);
}

TEST(ModelMemoryLimits, AModelOverAForcedBudgetIsRefusedBeforeUploading) {
    const SmallBloom files(DType::F32);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("device_heap=2M,host_heap=2M")));
    const MemoryBudget budget = ctx.memory_budget();
    const ModelMemoryEstimate need = estimate_model_memory(small_bloom(), WeightFormat{.dense = DType::F32});
    ASSERT_GT(need.total(), budget.available());
    const std::string message = error_message([&] { const Model model(ctx, files.dir()); });
    for (const std::string& part :
         {std::to_string(need.total()), std::to_string(budget.available()), std::string("device_heap=2097152"),
          std::string("host_heap=2097152"), std::string("weights"), files.dir().string()}) {
        EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing from: " << message;
    }
    EXPECT_EQ(ctx.memory_stats().buffer_count, 0u) << "something was uploaded";

    // The session counts: the weights fit 24 MiB, a 100000-token fp16 cache (100 MiB) does not.
    Context roomy(test_options(sink, LimitOverrides::parse("device_heap=16M,host_heap=8M")));
    const std::string too_long =
        error_message([&] { const Model model(roomy, files.dir(), ModelOptions{.session = {.max_tokens = 100000}}); });
    EXPECT_NE(too_long.find("KV cache"), std::string::npos) << too_long;
    EXPECT_EQ(roomy.memory_stats().buffer_count, 0u);
    const Model model(roomy, files.dir(), ModelOptions{.session = {.max_tokens = 64}});
    EXPECT_EQ(model.weights().bytes, need.weights);
    EXPECT_EQ(sink.validation_count(), 0u);
}

TEST(ModelMemoryLimits, AModelPartlyInHostVisibleMemoryMatchesTheReference) {
    const SmallBloom files(DType::F32);
    MessageSink sink;
    Context ctx(test_options(sink, LimitOverrides::parse("device_heap=2M")));
    const Model model(ctx, files.dir());
    constexpr std::uint32_t kPrompt = 13, kSteps = 3;
    Session session(model, SessionOptions{.max_tokens = kPrompt + kSteps, .kv_dtype = DType::F32});
    const MemoryStats stats = ctx.memory_stats();
    EXPECT_LE(stats.device_local_block_bytes, 2u << 20);
    EXPECT_GT(stats.fallback_buffer_bytes, model.weights().bytes / 2);
    EXPECT_NE(stats.note.find("device_heap=2097152"), std::string::npos) << stats.note;

    std::vector<std::uint32_t> ids = random_token_ids(kPrompt, small_bloom().vocab_size, 3);
    std::vector<float> gpu = session.forward(ids, Session::Logits::All);
    const std::uint32_t vocab = small_bloom().vocab_size;
    for (std::uint32_t s = 0; s < kSteps; ++s) {
        const std::span<const float> last = std::span(gpu).last(vocab);
        const auto next = static_cast<std::uint32_t>(std::max_element(last.begin(), last.end()) - last.begin());
        ids.push_back(next);
        const std::uint32_t one[] = {next};
        const std::vector<float> row = session.forward(one);
        gpu.insert(gpu.end(), row.begin(), row.end());
    }
    const reference::Model reference(model.config(), model.checkpoint());
    const std::vector<double> ref = reference.forward(ids);
    ASSERT_EQ(ref.size(), gpu.size());
    for (std::uint32_t t = 0; t < kPrompt + kSteps; ++t) {
        const ErrorStats e = compare_to_reference(std::span(gpu).subspan(std::size_t{t} * vocab, vocab),
                                                  std::span(ref).subspan(std::size_t{t} * vocab, vocab));
        EXPECT_LT(e.max_rel, 2e-5) << "position " << t << ": " << describe(e);  // test_model's fp32 bound
    }
    EXPECT_EQ(sink.validation_count(), 0u);
}

}  // namespace
}  // namespace vkf::test
