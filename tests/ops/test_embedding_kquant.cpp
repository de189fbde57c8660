// Embedding lookup in ggml's K-quant tables (Q2_K .. Q6_K super-blocks as GGUF stores
// them) and Q4_1, Q5_0, Q5_1 tables (blocks of 32, read alike): every element must equal dequantize_kquant_row's
// (ggml's to_float bit for bit, tests/quant/test_kquant_ggml.cpp), ids past the vocabulary give zeros, the table may
// start at any byte, and a row that is not whole super-blocks is refused. Outputs are poisoned (NaN).

#include "host/ops/device_tensor.hpp"
#include "host/ops/embedding.hpp"
#include "host/util/random.hpp"
#include "tests/ops/kquant_blocks.hpp"
#include "tests/support/vulkan_test.hpp"

#include <cstring>
#include <string>

namespace vkf::test {
namespace {

class EmbeddingKQuant : public VulkanTest {};

TEST_F(EmbeddingKQuant, RowsEqualGgmlDequantization) {
    std::uint64_t seed = 77;
    for (const QuantFormat q : {QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_K, QuantFormat::Q5_K,
                                QuantFormat::Q6_K, QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1}) {
        for (const std::uint32_t w_pad : {0u, 3u}) {
            // Rows of 3 super-blocks, or of 5 blocks of 32 (Q4_1, Q5_0, Q5_1).
            const std::uint32_t tokens = 13, vocab = 9,
                                hidden = kquant_block_weights(kquant_ggml_type(q)) == kKQuantBlock ? 768 : 160;
            SCOPED_TRACE(std::string(to_string(q)) + " w_pad " + std::to_string(w_pad));
            const std::vector<std::uint8_t> blocks = random_blocks(q, vocab, hidden, seed++);
            const GgmlType type = kquant_ggml_type(q);
            const std::uint64_t row_bytes = kquant_row_bytes(type, hidden);
            std::vector<float> exact(std::size_t{vocab} * hidden);
            for (std::uint32_t r = 0; r < vocab; ++r) {
                dequantize_kquant_row(type, std::span(blocks).subspan(r * row_bytes, row_bytes),
                                      std::span(exact).subspan(std::size_t{r} * hidden, hidden));
            }
            std::vector<std::uint8_t> padded(w_pad, 0x5A);
            padded.insert(padded.end(), blocks.begin(), blocks.end());
            std::vector<std::uint32_t> words((padded.size() + 3) / 4, 0);
            std::memcpy(words.data(), padded.data(), padded.size());
            const DeviceTensor tb = upload_words(ctx(), words, "table");
            const auto rnd = random_words(tokens, seed++);
            std::vector<std::uint32_t> ids(tokens);
            for (std::uint32_t t = 0; t < tokens; ++t) {
                ids[t] = t % 5 == 4 ? vocab + rnd[t] % 3 : rnd[t] % vocab;  // some past the vocabulary
            }
            ids[0] = 0;
            ids[tokens - 1] = vocab - 1;
            const DeviceTensor ib = upload_words(ctx(), ids, "ids");
            const DeviceTensor ob = nan_tensor(ctx(), std::size_t{tokens} * hidden, DType::F32, "embeddings", 1);
            auto list = ctx().command_list();
            record_embedding(ctx(), *list,
                             EmbeddingArgs{.ids = ib.range(),
                                           .table = BufferRange{.buffer = tb.range().buffer,
                                                                .offset = tb.range().offset + w_pad,
                                                                .size = blocks.size()},
                                           .out = ob.range(),
                                           .tokens = tokens,
                                           .vocab = vocab,
                                           .hidden = hidden,
                                           .quant = q});
            ctx().submit(*list);
            const auto out = download_tensor(ctx(), ob);
            std::size_t bad = 0;
            for (std::size_t i = 0; i < out.size(); ++i) {
                const std::uint32_t id = ids[i / hidden];
                const float want = id < vocab ? exact[std::size_t{id} * hidden + i % hidden] : 0.0f;
                if (!(out[i] == want) && ++bad <= 3) {  // a lookup is exact
                    ADD_FAILURE() << "element " << i << " (token " << i / hidden << ", id " << id << "): " << out[i]
                                  << " != " << want;
                }
            }
            EXPECT_EQ(bad, 0u);
        }
    }
}

TEST_F(EmbeddingKQuant, RefusesRowsThatAreNotWholeSuperBlocks) {
    const DeviceTensor tb = upload_words(ctx(), std::vector<std::uint32_t>(64, 0), "table");
    const DeviceTensor ib = upload_words(ctx(), std::vector<std::uint32_t>(1, 0), "ids");
    const DeviceTensor ob = nan_tensor(ctx(), 96, DType::F32, "embeddings");
    auto list = ctx().command_list();
    // A width that is not whole blocks of the format's size, named with the size in the error.
    struct Case {
        std::uint32_t hidden;
        QuantFormat quant;
        const char* name;
        const char* block;
    };
    for (const Case& c : {Case{96, QuantFormat::Q6_K, "q6_K", "256"}, Case{80, QuantFormat::Q4_1, "q4_1", "32"}}) {
        try {
            record_embedding(ctx(), *list,
                             EmbeddingArgs{.ids = ib.range(),
                                           .table = tb.range(),
                                           .out = ob.range(),
                                           .tokens = 1,
                                           .vocab = 1,
                                           .hidden = c.hidden,
                                           .quant = c.quant});
            ADD_FAILURE() << "a " << c.hidden << "-wide " << c.name << " table was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(c.block), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace vkf::test
