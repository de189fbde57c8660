// safetensors reading: round trips through the random checkpoint writer in every dtype
// and sharding, the "transformer." prefix, exact F16/BF16 conversion, and one test per
// kind of malformed file, each checking that the error names the file and the tensor.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "host/io/json.hpp"
#include "host/io/safetensors.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "host/util/half.hpp"
#include "runtime/error.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::DType;

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

std::string bytes_of(std::span<const float> values) {
    std::string bytes(values.size() * 4, '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

std::string u16_bytes(std::span<const std::uint16_t> values) {
    std::string bytes;
    for (std::uint16_t v : values) {
        bytes.push_back(static_cast<char>(v & 0xff));
        bytes.push_back(static_cast<char>(v >> 8));
    }
    return bytes;
}

class SafetensorsTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::random_device entropy;
        const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
        dir_ = fs::temp_directory_path() /
               ("vkf_test_safetensors_" + std::to_string(stamp) + "_" + std::to_string(entropy()));
        fs::create_directories(dir_);
    }

    void TearDown() override {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    fs::path path(const std::string& name) const { return dir_ / name; }

    fs::path write_bytes(const std::string& name, const std::string& bytes) const {
        const fs::path file = path(name);
        fs::create_directories(file.parent_path());
        std::ofstream out(file, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return file;
    }

    // A safetensors file from header text and data bytes; the length field is the
    // header's size unless overridden.
    fs::path write_file(const std::string& name, const std::string& header, const std::string& data,
                        std::optional<std::uint64_t> header_length = std::nullopt) const {
        const std::uint64_t length = header_length.value_or(header.size());
        std::string bytes;
        for (int i = 0; i < 8; ++i) {
            bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
        }
        return write_bytes(name, bytes + header + data);
    }

    // The message of the vkf::Error that opening `file` throws.
    static std::string open_error(const fs::path& file) {
        return vkf::test::error_message([&] { vkf::open_safetensors(file); });
    }

    // Opening must fail with a message naming the file and containing every fragment.
    void expect_refused(const std::string& header, const std::string& data, std::vector<std::string> fragments,
                        std::optional<std::uint64_t> header_length = std::nullopt) {
        const fs::path file =
            write_file("case_" + std::to_string(case_counter_++) + ".safetensors", header, data, header_length);
        const std::string message = open_error(file);
        EXPECT_NE(message.find(file.string()), std::string::npos) << message;
        for (const std::string& fragment : fragments) {
            EXPECT_NE(message.find(fragment), std::string::npos)
                << "header: " << header << "\nmessage: " << message << "\nmissing: " << fragment;
        }
    }

    fs::path dir_;
    int case_counter_ = 0;
};

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
    const vkf::SafetensorsFile& file = *checkpoint.files()[0];
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

TEST_F(SafetensorsTest, RefusesBadHeaderLengths) {
    const fs::path tiny = write_bytes("tiny.safetensors", "abc");
    EXPECT_NE(open_error(tiny).find("only 3 bytes"), std::string::npos);
    EXPECT_NE(open_error(path("missing.safetensors")).find("cannot open"), std::string::npos);
    expect_refused("{}", "", {"header length 1000 extends beyond the end of the file (10 bytes)"}, 1000);
    expect_refused("{}", "", {"absurdly large"}, std::uint64_t{1} << 40);
    expect_refused("{}", "", {"absurdly large"}, ~std::uint64_t{0});
    expect_refused("", "", {"header: line 1, column 1: syntax error while parsing value - unexpected end of input"});
}

TEST_F(SafetensorsTest, RefusesBadJson) {
    expect_refused(R"({"w": {"dtype": "F32", )", "", {"header: line 1, column 24"});
    expect_refused("[]", "", {"must be a JSON object, got array"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                   R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                   std::string(8, '\0'), {"duplicate key 'w'"});
    expect_refused(R"({"__metadata__": [1]})", "", {"__metadata__ must be an object"});
    expect_refused("{\"w\xff\": 1}", "", {"ill-formed UTF-8 byte"});
}

TEST_F(SafetensorsTest, RefusesBadEntries) {
    const std::string data(16, '\0');
    expect_refused(R"({"w": 5})", "", {"tensor 'w'", "expected an object with dtype, shape and data_offsets"});
    expect_refused(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", data, {"tensor 'w'", "missing field 'dtype'"});
    expect_refused(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", data, {"tensor 'w'", "missing field 'shape'"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[1]}})", data, {"tensor 'w'", "missing field 'data_offsets'"});
    expect_refused(R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}})", data,
                   {"tensor 'w'", "unknown dtype 'F7'"});
    expect_refused(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", data,
                   {"w.dtype: expected a string, got number 32"});
    expect_refused(R"({"w":{"dtype":"F32","shape":4,"data_offsets":[0,4]}})", data,
                   {"w.shape: expected an array, got number 4"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", data,
                   {"w.shape[0]: expected a non-negative integer, got number -1"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", data,
                   {"w.shape[0]: expected a non-negative integer, got number 1.5"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", data,
                   {"tensor 'w'", "data_offsets must be [begin, end], got an array of 3 elements"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,"4"]}})", data,
                   {"w.data_offsets[1]: expected an integer, got string"});
}

TEST_F(SafetensorsTest, RefusesBadOffsets) {
    const std::string data(16, '\0');
    expect_refused(R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})", data,
                   {"tensor 'w'", "data_offsets [0, 400] extend beyond the data section, which has 16 bytes"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", data,
                   {"tensor 'w'", "data_offsets [8, 4] end before they begin"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data,
                   {"tensor 'w'", "hold 16 bytes but shape [3] of F32 needs 12"});
    expect_refused(R"({"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,16]}})", data,
                   {"tensor 'w'", "hold 16 bytes but shape [4] of BF16 needs 8"});
    expect_refused(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,16]}})", data,
                   {"tensor 'w'", "needs more than 2^64"});
    expect_refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
                   R"("c":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
                   data, {"tensor 'b'", "overlap tensor 'a' at [0, 8]"});
    expect_refused(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                   data, {"tensor 'b'", "bytes [4, 8) before this tensor belong to no tensor"});
    expect_refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data,
                   {"bytes [8, 16) after the last tensor belong to no tensor"});
    // Two tensors at the same offsets are an overlap too.
    expect_refused(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                   R"("b":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                   data, {"tensor 'b'", "overlap tensor 'a'"});
}

TEST_F(SafetensorsTest, RefusesBrokenShardedCheckpoints) {
    const auto error_of = [](const fs::path& where) {
        return vkf::test::error_message([&] { vkf::open_checkpoint(where); });
    };
    const std::vector<float> values = {1.0f, 2.0f};
    write_file("ck/part-a.safetensors", R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", bytes_of(values));
    const fs::path index = path("ck/model.safetensors.index.json");

    write_bytes(
        "ck/model.safetensors.index.json",
        R"({"metadata": {"total_size": 16}, "weight_map": {"x": "part-a.safetensors", "y": "part-a.safetensors"}})");
    std::string message = error_of(path("ck"));
    EXPECT_NE(message.find(index.string()), std::string::npos) << message;
    EXPECT_NE(message.find("tensor 'y'"), std::string::npos) << message;
    EXPECT_NE(message.find(path("ck/part-a.safetensors").string()), std::string::npos) << message;

    write_bytes("ck/model.safetensors.index.json", R"({"weight_map": {"x": "part-b.safetensors"}})");
    message = error_of(path("ck"));
    EXPECT_NE(message.find("tensor 'x'"), std::string::npos) << message;
    EXPECT_NE(message.find("part-b.safetensors' does not exist"), std::string::npos) << message;

    write_bytes("ck/model.safetensors.index.json", R"({"weight_map": {"x": "../part-a.safetensors"}})");
    EXPECT_NE(error_of(path("ck")).find("not a relative path inside the checkpoint directory"), std::string::npos);

    write_bytes("ck/model.safetensors.index.json", R"({"weight_map": {"x": 3}})");
    EXPECT_NE(error_of(path("ck")).find("weight_map.x: expected a string, got number 3"), std::string::npos);

    write_bytes("ck/model.safetensors.index.json", R"({"metadata": {}})");
    EXPECT_NE(error_of(path("ck")).find("missing key 'weight_map'"), std::string::npos);

    write_bytes("ck/model.safetensors.index.json", R"({"weight_map": {"x": "part-a.safetensors",}})");
    EXPECT_NE(error_of(path("ck")).find(index.string() + ": line 1, column"), std::string::npos);

    // A broken shard is reported with its own name.
    write_bytes("ck/part-c.safetensors", "garbage!garbage!");
    write_bytes("ck/model.safetensors.index.json", R"({"weight_map": {"x": "part-c.safetensors"}})");
    EXPECT_NE(error_of(path("ck")).find(path("ck/part-c.safetensors").string()), std::string::npos);

    // A valid index opens, and only the tensors it lists are visible.
    write_bytes("ck/model.safetensors.index.json", R"({"weight_map": {"x": "part-a.safetensors"}})");
    EXPECT_EQ(vkf::open_checkpoint(path("ck")).read_as_f32("x"), values);

    EXPECT_NE(error_of(path("nowhere")).find("checkpoint '" + path("nowhere").string() + "' does not exist"),
              std::string::npos);
    fs::create_directories(path("empty"));
    EXPECT_NE(error_of(path("empty")).find("has neither model.safetensors nor model.safetensors.index.json"),
              std::string::npos);
}

}  // namespace
