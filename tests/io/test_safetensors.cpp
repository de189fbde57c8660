// safetensors reading: round trips through the random checkpoint writer in every dtype
// and sharding, the "transformer." prefix, exact F16/BF16 conversion, unaligned data, empty
// and scalar tensors, and dtypes that are not read as floats. Malformed files:
// test_safetensors_errors.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/half.hpp"
#include "tests/io/safetensors_test.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::DType;
using vkf::test::bytes_of;
using vkf::test::SafetensorsTest;

vkf::ModelConfig tiny_bloom() {
    return vkf::ModelConfig{.family = vkf::ModelFamily::Bloom,
                            .vocab_size = 50,
                            .hidden = 16,
                            .n_layer = 2,
                            .n_head = 4,
                            .n_kv_head = 4,
                            .head_dim = 4,
                            .ffn_hidden = 64};
}

vkf::ModelConfig tiny_mpt() {
    return vkf::ModelConfig{.family = vkf::ModelFamily::Mpt,
                            .vocab_size = 40,
                            .hidden = 24,
                            .n_layer = 2,
                            .n_head = 6,
                            .n_kv_head = 6,
                            .head_dim = 4,
                            .ffn_hidden = 96,
                            .no_bias = true,
                            .clip_qkv = 6.0};
}

std::string u16_bytes(std::span<const std::uint16_t> values) {
    std::string bytes;
    for (std::uint16_t v : values) {
        bytes.push_back(static_cast<char>(v & 0xff));
        bytes.push_back(static_cast<char>(v >> 8));
    }
    return bytes;
}

TEST_F(SafetensorsTest, WriterRoundTripF32) {
    const vkf::ModelConfig config = tiny_bloom();
    vkf::write_random_checkpoint(path("bloom"), config, 7, DType::F32);
    ASSERT_TRUE(fs::exists(path("bloom/config.json")));
    ASSERT_TRUE(fs::exists(path("bloom/model.safetensors")));
    EXPECT_FALSE(fs::exists(path("bloom/model.safetensors.index.json")));

    const vkf::ShardedCheckpoint checkpoint = vkf::open_checkpoint(path("bloom"));
    const std::vector<vkf::ExpectedTensor> expected = vkf::expected_tensors(config);
    ASSERT_EQ(checkpoint.tensor_names().size(), expected.size());
    for (const vkf::ExpectedTensor& tensor : expected) {
        const std::string stored = "transformer." + tensor.name;
        const vkf::TensorInfo& info = checkpoint.tensor_info(tensor.name);
        EXPECT_EQ(info.name, stored);
        EXPECT_EQ(info.shape, tensor.shape) << stored;
        EXPECT_EQ(info.dtype, DType::F32);
        const std::vector<float> values = checkpoint.read_as_f32(stored);
        ASSERT_EQ(values.size(), info.element_count());
        double sum = 0.0, sum_squares = 0.0;
        float lo = values[0], hi = values[0];
        for (float v : values) {
            ASSERT_TRUE(std::isfinite(v));
            sum += v;
            sum_squares += double{v} * v;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
        const double mean = sum / values.size();
        const double std_dev = std::sqrt(sum_squares / values.size() - mean * mean);
        EXPECT_LT(lo, hi) << stored << " is constant";
        switch (tensor.role) {
            case vkf::TensorRole::NormWeight:
                EXPECT_GE(lo, 0.9f);
                EXPECT_LE(hi, 1.1f);
                break;
            case vkf::TensorRole::Embedding:
            case vkf::TensorRole::LinearWeight:
                EXPECT_LE(std::max(-lo, hi), 0.0347f) << stored;
                EXPECT_NEAR(std_dev, 0.02, 0.003) << stored;
                EXPECT_NEAR(mean, 0.0, 0.003) << stored;
                break;
            default:
                EXPECT_LE(std::max(-lo, hi), 0.02f) << stored;
                break;
        }
    }

    // The data section starts 8-aligned, after a header padded with spaces.
    const vkf::TensorFile& file = *checkpoint.files()[0];
    std::ifstream in(file.path(), std::ios::binary);
    unsigned char length_bytes[8];
    in.read(reinterpret_cast<char*>(length_bytes), 8);
    std::uint64_t length = 0;
    for (int i = 0; i < 8; ++i) {
        length |= std::uint64_t{length_bytes[i]} << (8 * i);
    }
    EXPECT_EQ(length % 8, 0u);
    std::string header(length, '\0');
    in.read(header.data(), static_cast<std::streamsize>(length));
    EXPECT_EQ(header.front(), '{');
    EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}'));
    const vkf::JsonValue json = vkf::parse_json(header, "header");
    EXPECT_EQ(json.at("__metadata__").at("format").as_string(), "pt");
}

TEST_F(SafetensorsTest, HalfDtypesHoldTheRoundedF32Weights) {
    const vkf::ModelConfig config = tiny_mpt();
    vkf::write_random_checkpoint(path("f32"), config, 11, DType::F32);
    vkf::write_random_checkpoint(path("f16"), config, 11, DType::F16);
    vkf::write_random_checkpoint(path("bf16"), config, 11, DType::BF16);
    const vkf::ShardedCheckpoint f32 = vkf::open_checkpoint(path("f32"));
    const vkf::ShardedCheckpoint f16 = vkf::open_checkpoint(path("f16"));
    const vkf::ShardedCheckpoint bf16 = vkf::open_checkpoint(path("bf16"));
    for (const std::string& name : f32.tensor_names()) {
        const std::vector<float> reference = f32.read_as_f32(name);
        EXPECT_EQ(f16.tensor_info(name).dtype, DType::F16);
        EXPECT_EQ(bf16.tensor_info(name).dtype, DType::BF16);
        EXPECT_EQ(f16.read_raw(name).size(), reference.size() * 2);
        EXPECT_EQ(f16.read_as_f32(name), vkf::halves_to_floats(vkf::floats_to_halves(reference))) << name;
        EXPECT_EQ(bf16.read_as_f32(name), vkf::bfloat16s_to_floats(vkf::floats_to_bfloat16s(reference))) << name;
    }
}

TEST_F(SafetensorsTest, SeedsSelectTheWeights) {
    const vkf::ModelConfig config = tiny_bloom();
    vkf::write_random_checkpoint(path("a"), config, 1, DType::F32);
    vkf::write_random_checkpoint(path("b"), config, 1, DType::F32);
    vkf::write_random_checkpoint(path("c"), config, 2, DType::F32);
    const auto a = vkf::open_checkpoint(path("a")), b = vkf::open_checkpoint(path("b")),
               c = vkf::open_checkpoint(path("c"));
    const std::string name = "h.1.mlp.dense_4h_to_h.weight";
    EXPECT_EQ(a.read_as_f32(name), b.read_as_f32(name));
    EXPECT_NE(a.read_as_f32(name), c.read_as_f32(name));
    // Different tensors of one model differ too.
    EXPECT_NE(a.read_as_f32("h.0.self_attention.dense.weight"), a.read_as_f32("h.1.self_attention.dense.weight"));
}

TEST_F(SafetensorsTest, ShardedCheckpointMatchesSingleFile) {
    const vkf::ModelConfig config = tiny_bloom();
    vkf::write_random_checkpoint(path("single"), config, 5, DType::F16);
    std::size_t progress_calls = 0;
    std::uint64_t last_bytes = 0, total = 0;
    vkf::write_random_checkpoint(path("sharded"), config, 5, DType::F16, 3,
                                 [&](const vkf::CheckpointWriteProgress& progress) {
                                     ++progress_calls;
                                     EXPECT_GT(progress.bytes_done, last_bytes);
                                     last_bytes = progress.bytes_done;
                                     total = progress.total_bytes;
                                 });
    EXPECT_EQ(progress_calls, vkf::expected_tensors(config).size());
    EXPECT_EQ(last_bytes, total);
    for (const char* name : {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                             "model-00003-of-00003.safetensors", "model.safetensors.index.json", "config.json"}) {
        EXPECT_TRUE(fs::exists(path("sharded") / name)) << name;
    }
    EXPECT_FALSE(fs::exists(path("sharded/model.safetensors")));

    const vkf::JsonValue index = vkf::read_json_file(path("sharded/model.safetensors.index.json"));
    EXPECT_EQ(index.at("metadata").at("total_size").as_uint64(), total);

    const vkf::ShardedCheckpoint single = vkf::open_checkpoint(path("single"));
    const vkf::ShardedCheckpoint sharded = vkf::open_checkpoint(path("sharded"));
    ASSERT_EQ(sharded.files().size(), 3u);
    for (const auto& file : sharded.files()) {
        EXPECT_FALSE(file->tensors().empty());
    }
    EXPECT_EQ(sharded.tensor_names(), single.tensor_names());
    for (const std::string& name : single.tensor_names()) {
        EXPECT_EQ(sharded.tensor_info(name).shape, single.tensor_info(name).shape);
        EXPECT_EQ(sharded.read_as_f32(name), single.read_as_f32(name)) << name;
    }
    EXPECT_EQ(sharded.file_of("word_embeddings.weight").filename(), "model-00001-of-00003.safetensors");
    EXPECT_EQ(sharded.file_of("ln_f.bias").filename(), "model-00003-of-00003.safetensors");
    // The index itself can be opened directly too.
    EXPECT_EQ(vkf::open_checkpoint(path("sharded/model.safetensors.index.json")).tensor_names().size(),
              single.tensor_names().size());
}

TEST_F(SafetensorsTest, RewritingSwitchesLayoutCleanly) {
    const vkf::ModelConfig config = tiny_bloom();
    vkf::write_random_checkpoint(path("m"), config, 1, DType::F32, 2);
    vkf::write_random_checkpoint(path("m"), config, 1, DType::F32, 1);
    EXPECT_FALSE(fs::exists(path("m/model.safetensors.index.json")));
    vkf::write_random_checkpoint(path("m"), config, 1, DType::F32, 2);
    EXPECT_FALSE(fs::exists(path("m/model.safetensors")));
    EXPECT_EQ(vkf::open_checkpoint(path("m")).files().size(), 2u);
}

TEST_F(SafetensorsTest, WriterRefusesImpossibleRequests) {
    const vkf::ModelConfig config = tiny_bloom();
    EXPECT_THROW(vkf::write_random_checkpoint(path("x"), config, 1, DType::I64), vkf::Error);
    EXPECT_THROW(vkf::write_random_checkpoint(path("x"), config, 1, DType::F32, 0), vkf::Error);
    EXPECT_THROW(vkf::write_random_checkpoint(path("x"), config, 1, DType::F32, 1000), vkf::Error);
    vkf::ModelConfig bad = config;
    bad.n_head = 5;
    EXPECT_THROW(vkf::write_random_checkpoint(path("x"), bad, 1, DType::F32), vkf::Error);
}

TEST_F(SafetensorsTest, NamesWorkWithAndWithoutThePrefix) {
    vkf::write_random_checkpoint(path("prefixed"), tiny_mpt(), 3, DType::F32);
    const vkf::ShardedCheckpoint prefixed = vkf::open_checkpoint(path("prefixed"));
    ASSERT_NE(prefixed.find("blocks.0.attn.Wqkv.weight"), nullptr);
    EXPECT_EQ(prefixed.find("blocks.0.attn.Wqkv.weight"), prefixed.find("transformer.blocks.0.attn.Wqkv.weight"));
    EXPECT_EQ(prefixed.tensor_info("wte.weight").name, "transformer.wte.weight");
    EXPECT_EQ(prefixed.find("blocks.0.attn.Wqkv.bias"), nullptr);  // no_bias
    EXPECT_EQ(prefixed.find("h.0.x"), nullptr);

    // A checkpoint saved from the bare model (as bigscience/bloom-560m is): no prefix.
    const std::vector<float> values = {1.0f, -2.0f};
    write_file("bare/model.safetensors",
               R"({"h.0.input_layernorm.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", bytes_of(values));
    const vkf::ShardedCheckpoint bare = vkf::open_checkpoint(path("bare"));
    EXPECT_EQ(bare.read_as_f32("transformer.h.0.input_layernorm.weight"), values);
    EXPECT_EQ(bare.read_as_f32("h.0.input_layernorm.weight"), values);
    const std::string message = [&] {
        try {
            bare.at("h.1.input_layernorm.weight");
        } catch (const vkf::Error& error) {
            return std::string(error.what());
        }
        return std::string();
    }();
    EXPECT_NE(message.find("no tensor 'h.1.input_layernorm.weight' (nor 'transformer.h.1.input_layernorm.weight')"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(path("bare").string()), std::string::npos) << message;
}

TEST_F(SafetensorsTest, ConvertsF16AndBF16Exactly) {
    // 1, -2, +inf, the smallest subnormal, -0, 65504 (F16's largest).
    const std::vector<std::uint16_t> f16 = {0x3c00, 0xc000, 0x7c00, 0x0001, 0x8000, 0x7bff};
    // 1, -2, +inf, the smallest subnormal, 3.140625, -150 * 2^119.
    const std::vector<std::uint16_t> bf16 = {0x3f80, 0xc000, 0x7f80, 0x0001, 0x4049, 0xfe96};
    const std::string header = R"({"__metadata__":{"format":"pt"},)"
                               R"("a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},)"
                               R"("b":{"dtype":"BF16","shape":[6],"data_offsets":[12,24]}})";
    const fs::path file = write_file("conv.safetensors", header, u16_bytes(f16) + u16_bytes(bf16));
    const vkf::SafetensorsFile st = vkf::open_safetensors(file);
    const std::vector<float> a = st.read_as_f32("a");
    EXPECT_EQ(a[0], 1.0f);
    EXPECT_EQ(a[1], -2.0f);
    EXPECT_EQ(a[2], std::numeric_limits<float>::infinity());
    EXPECT_EQ(a[3], std::ldexp(1.0f, -24));
    EXPECT_EQ(a[4], 0.0f);
    EXPECT_TRUE(std::signbit(a[4]));
    EXPECT_EQ(a[5], 65504.0f);
    const std::vector<float> b = st.read_as_f32("b");
    EXPECT_EQ(b[0], 1.0f);
    EXPECT_EQ(b[1], -2.0f);
    EXPECT_EQ(b[2], std::numeric_limits<float>::infinity());
    EXPECT_EQ(b[3], std::ldexp(1.0f, -133));
    EXPECT_EQ(b[4], 3.140625f);
    EXPECT_EQ(b[5], -std::ldexp(150.0f, 119));
    EXPECT_EQ(st.tensor_info("a").shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(st.tensors().size(), 2u);
}

TEST_F(SafetensorsTest, ReadsUnalignedDataSections) {
    // A 61-byte header puts the data at file offset 69: reads must not assume alignment.
    const std::vector<float> values = {0.5f, -1.25f, 3.0f};
    std::string header = R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})";
    header.append(61 - header.size(), ' ');
    const fs::path file = write_file("unaligned.safetensors", header, bytes_of(values));
    EXPECT_EQ(vkf::open_safetensors(file).read_as_f32("w"), values);
}

TEST_F(SafetensorsTest, AcceptsEmptyAndScalarTensors) {
    const std::vector<float> scalar = {42.0f};
    const std::string header = R"({"empty":{"dtype":"F16","shape":[0,4],"data_offsets":[0,0]},)"
                               R"("scalar":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})";
    const vkf::SafetensorsFile st = vkf::open_safetensors(write_file("e.safetensors", header, bytes_of(scalar)));
    EXPECT_TRUE(st.read_as_f32("empty").empty());
    EXPECT_EQ(st.tensor_info("empty").element_count(), 0u);
    EXPECT_EQ(st.read_as_f32("scalar"), scalar);
    EXPECT_EQ(st.tensor_info("scalar").element_count(), 1u);
    // A file with no tensors at all is valid too.
    EXPECT_TRUE(vkf::open_safetensors(write_file("none.safetensors", "{}      ", "")).tensors().empty());
}

TEST_F(SafetensorsTest, UnsupportedDtypesOpenButAreNotReadAsFloats) {
    const std::string header = R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})";
    const fs::path file = write_file("ints.safetensors", header, std::string(16, '\x01'));
    const vkf::SafetensorsFile st = vkf::open_safetensors(file);
    EXPECT_EQ(st.tensor_info("ids").dtype, DType::I64);
    EXPECT_EQ(st.read_raw("ids").size(), 16u);
    try {
        st.read_as_f32("ids");
        ADD_FAILURE() << "I64 read as floats";
    } catch (const vkf::Error& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find(file.string()), std::string::npos) << message;
        EXPECT_NE(message.find("tensor 'ids'"), std::string::npos) << message;
        EXPECT_NE(message.find("dtype I64"), std::string::npos) << message;
    }
    EXPECT_THROW(st.tensor_info("other"), vkf::Error);
}

}  // namespace
