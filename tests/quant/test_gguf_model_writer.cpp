// write_gguf_model (vkf-quantize --format gguf) read back through vkformer's GGUF loader: the
// configuration, every tensor (BLOOM's regrouped QKV back in BLOOM's order; F16 exact, Q8_0/Q4_0
// the planes vkformer's own quantizer makes), the tokenizer keys; and its refusals. llama.cpp's
// gguf-py reads the same files in tests/apps/gguf_write_test.py.

#include "host/io/gguf.hpp"
#include "host/io/json.hpp"
#include "host/quant/gguf_model_writer.hpp"
#include "host/quant/gguf_tensor_file.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/gguf_checkpoint.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using namespace vkf;
using vkf::test::TempDir;

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
}

std::vector<std::string> strings(const GgufValue& value) {
    std::vector<std::string> out;
    for (const GgufValue& v : value.as_array()) {
        out.push_back(v.as_string());
    }
    return out;
}

// A byte-level BPE tokenizer.json of 6 tokens (ids 0..5 of the model's 1009) and its config.
void write_tokenizer(const fs::path& dir) {
    write_text(dir / "tokenizer.json", R"({"version": "1.0", "added_tokens": [
        {"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true},
        {"id": 5, "content": "<|tool|>", "special": false}],
      "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
      "post_processor": null, "decoder": {"type": "ByteLevel"},
      "model": {"type": "BPE", "vocab": {"<s>": 0, "</s>": 1, "a": 2, "b": 3, "ab": 4, "<|tool|>": 5},
                "merges": [["a", "b"]]}})");
    write_text(dir / "tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": {"content": "</s>"},
      "add_bos_token": true, "chat_template": [{"name": "default", "template": "<|im_start|>{{x}}<|im_end|>"},
                                               {"name": "tool use", "template": "T"}]})");
}

class GgufModelWriterTest : public ::testing::Test {
protected:
    void SetUp() override {
        write_random_checkpoint(original_.path(), config_, 7, DType::F16, 2);
        write_tokenizer(original_.path());
    }
    ModelConfig config_ = test::small_bloom();
    TempDir original_{"vkf_test_gguf_model_original"};
    TempDir out_{"vkf_test_gguf_model_out"};
};

TEST_F(GgufModelWriterTest, BloomReadsBackAsTheCheckpoint) {
    const ShardedCheckpoint original = open_checkpoint(original_.path());
    for (const GgufMatrixType type : {GgufMatrixType::F16, GgufMatrixType::Q8_0, GgufMatrixType::Q4_0}) {
        SCOPED_TRACE(std::string(to_string(type)));
        const fs::path path = out_.path() / "model.gguf";
        write_gguf_model(original_.path(), path, type);
        const GgufFile file = open_gguf(path);
        EXPECT_EQ(file.string_at("general.architecture"), "bloom");
        EXPECT_EQ(file.uint_at("general.file_type"), type == GgufMatrixType::F16    ? 1u
                                                     : type == GgufMatrixType::Q8_0 ? 7u
                                                                                    : 2u);
        const GgufModelSource model = open_gguf_model(open_gguf(path));
        EXPECT_EQ(model.config.hidden, config_.hidden);
        EXPECT_EQ(model.config.n_layer, config_.n_layer);
        EXPECT_EQ(model.config.n_head, config_.n_head);
        EXPECT_EQ(model.config.vocab_size, config_.vocab_size);
        EXPECT_EQ(model.config.bos_token_id, std::optional<std::uint32_t>(0));
        const QuantFormat format = type == GgufMatrixType::Q8_0   ? QuantFormat::Q8_0
                                   : type == GgufMatrixType::Q4_0 ? QuantFormat::Q4_0
                                                                  : QuantFormat::None;
        for (const ExpectedTensor& e : expected_tensors(config_)) {
            const std::vector<float> want = read_tensor_f32(original, e);
            if (format == QuantFormat::None || !quantized_role(e.role)) {
                EXPECT_EQ(read_tensor_f32(model.checkpoint, e), want) << e.name;
                continue;
            }
            const QuantizedMatrix q = quantize_matrix(format, want, e.shape[0], e.shape[1], e.name);
            EXPECT_EQ(read_weights_f32(model.checkpoint, e, format),
                      dequantize_matrix(format, q.values, q.scales, e.shape[0], e.shape[1]))
                << e.name;
        }
    }
}

TEST_F(GgufModelWriterTest, WritesTheTokenizerAsTheConverterDoes) {
    const fs::path path = out_.path() / "model.gguf";
    write_gguf_model(original_.path(), path, GgufMatrixType::F16);
    const GgufFile file = open_gguf(path);
    EXPECT_EQ(file.string_at("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(file.string_at("tokenizer.ggml.pre"), "gpt-2");
    const std::vector<std::string> tokens = strings(file.at("tokenizer.ggml.tokens"));
    ASSERT_EQ(tokens.size(), config_.vocab_size);
    EXPECT_EQ(tokens[4], "ab");
    EXPECT_EQ(tokens[6], "[PAD6]");
    const auto& types = file.at("tokenizer.ggml.token_type").as_array();
    EXPECT_EQ(types[0].as_int64(), 3);  // CONTROL
    EXPECT_EQ(types[2].as_int64(), 1);  // NORMAL
    EXPECT_EQ(types[5].as_int64(), 3);  // looks special: <|...|>
    EXPECT_EQ(types[6].as_int64(), 5);  // UNUSED filler
    EXPECT_EQ(strings(file.at("tokenizer.ggml.merges")), std::vector<std::string>{"a b"});
    EXPECT_EQ(file.uint_at("tokenizer.ggml.bos_token_id"), 0u);
    EXPECT_EQ(file.uint_at("tokenizer.ggml.eos_token_id"), 1u);
    EXPECT_TRUE(file.at("tokenizer.ggml.add_bos_token").as_bool());
    EXPECT_EQ(file.string_at("tokenizer.chat_template"), "<|im_start|>{{x}}<|im_end|>");
    EXPECT_EQ(file.string_at("tokenizer.chat_template.tool_use"), "T");
    EXPECT_EQ(strings(file.at("tokenizer.chat_templates")), std::vector<std::string>{"tool_use"});
    // The reader turns the keys back into a tokenizer.json with the vocabulary it came from.
    const std::optional<std::string> json = tokenizer_json_from_gguf(file);
    ASSERT_TRUE(json.has_value());
    const JsonValue tokenizer = parse_json(*json, "tokenizer");
    EXPECT_EQ(tokenizer.at("model").at("vocab").size(), 6u);
}

TEST_F(GgufModelWriterTest, RefusesWhatItCannotWrite) {
    const fs::path path = out_.path() / "x.gguf";
    // A family vkformer's GGUF reader does not load (Falcon-RW), refused by name.
    const TempDir falcon("vkf_test_gguf_model_falcon");
    ModelConfig falcon_config = test::small_bloom();
    falcon_config.family = ModelFamily::Falcon;
    write_random_checkpoint(falcon.path(), falcon_config, 3, DType::F16);
    EXPECT_NE(test::error_message([&] {
                  write_gguf_model(falcon.path(), path, GgufMatrixType::F16);
              }).find("vkf-quantize writes GGUF for BLOOM, MPT, Refact, Baichuan and Jais"),
              std::string::npos);
    EXPECT_NE(
        test::error_message([&] { write_gguf_model(falcon.path(), path, GgufMatrixType::F16); }).find("not falcon"),
        std::string::npos);
    // An already quantized checkpoint.
    const TempDir quantized("vkf_test_gguf_model_q");
    write_quantized_checkpoint(original_.path(), quantized.path(), QuantFormat::Q8_0);
    EXPECT_NE(test::error_message([&] {
                  write_gguf_model(quantized.path(), path, GgufMatrixType::F16);
              }).find("is already quantized (q8_0)"),
              std::string::npos);
    // A pre-tokenizer llama.cpp's byte-level BPE does not have, and a token beyond the vocabulary.
    write_text(original_.path() / "tokenizer.json",
               R"({"pre_tokenizer": {"type": "Whitespace"}, "model": {"type": "BPE", "vocab": {}, "merges": []}})");
    const std::string pre = test::error_message([&] { write_gguf_model(original_.path(), path, GgufMatrixType::F16); });
    EXPECT_NE(pre.find("pre_tokenizer {\"type\":\"Whitespace\"} is neither GPT-2's ByteLevel nor BLOOM's"),
              std::string::npos)
        << pre;
    write_text(
        original_.path() / "tokenizer.json",
        R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"x": 5000}, "merges": []}})");
    const std::string beyond =
        test::error_message([&] { write_gguf_model(original_.path(), path, GgufMatrixType::F16); });
    EXPECT_NE(beyond.find("token 'x' has id 5000, beyond config.json's vocab_size 1009"), std::string::npos) << beyond;
    EXPECT_FALSE(fs::exists(path));
}

}  // namespace
