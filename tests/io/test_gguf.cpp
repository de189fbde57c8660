// GGUF files read by open_gguf (host/io/gguf.hpp): well-formed files of every metadata type
// and several tensor types, then hostile variants of them, each refused with a message naming
// the file and the problem.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/io/gguf.hpp"
#include "tests/io/gguf_test_writer.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::GgmlType;
using vkf::GgufValueType;
using vkf::test::GgufBytes;

class GgufTest : public ::testing::Test {
protected:
    fs::path write(const std::string& bytes, const std::string& name = "model.gguf") {
        const fs::path path = dir_.path() / name;
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return path;
    }
    std::string open_error(const std::string& bytes) {
        const fs::path path = write(bytes);
        return vkf::test::error_message([&] { vkf::open_gguf(path); });
    }
    void expect_refused(const std::string& bytes, const std::vector<std::string>& parts) {
        const std::string message = open_error(bytes);
        EXPECT_NE(message.find("GGUF file '"), std::string::npos) << message;
        for (const std::string& part : parts) {
            EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
        }
    }
    vkf::test::TempDir dir_{"vkf_test_gguf"};
};

// Two tensors: "a" F32 [2, 3] (dims 3, 2) and "b" Q8_0 [1, 32], after every metadata type.
GgufBytes good_file(std::uint32_t version = 3) {
    GgufBytes g;
    g.header(2, 16, version);
    g.str("u8").u32(0).u8(200);
    g.str("i8").u32(1).u8(0xfe);
    g.str("u16").u32(2).u8(0x34).u8(0x12);
    g.str("i16").u32(3).u8(0xff).u8(0xff);
    g.kv_u32("u32", 4000000000u);
    g.str("i32").u32(5).u32(0xfffffff9u);
    g.kv_f32("f32", 0.5f);
    g.str("bool").u32(7).u8(1);
    g.kv_str("general.architecture", "bloom");
    g.str("u64").u32(10).u64(~std::uint64_t{0});
    g.str("i64").u32(11).u64(~std::uint64_t{0});
    g.str("f64").u32(12).u64(0x3ff8000000000000ull);  // 1.5
    g.str("strings").u32(9).u32(8).u64(2).str("x").str("\xc3\xa9");
    g.str("ints").u32(9).u32(4).u64(3).u32(1).u32(2).u32(0xffffffffu);
    g.str("empty").u32(9).u32(6).u64(0);
    g.str("unicode.\xe2\x82\xac").u32(7).u8(0);
    g.tensor("a", {3, 2}, 0, 0);
    g.tensor("b", {32, 1}, 8, 32);
    g.pad(32);
    for (int i = 0; i < 6; ++i) {
        g.f32(static_cast<float>(i));
    }
    g.pad(32);
    for (int i = 0; i < 34; ++i) {
        g.u8(static_cast<std::uint8_t>(i));
    }
    return g;
}

TEST_F(GgufTest, ReadsEveryValueTypeAndTensor) {
    for (const std::uint32_t version : {2u, 3u}) {
        const vkf::GgufFile file = vkf::open_gguf(write(good_file(version).bytes()));
        EXPECT_EQ(file.version(), version);
        ASSERT_EQ(file.metadata().size(), 16u);
        EXPECT_EQ(file.metadata()[0].key, "u8");
        EXPECT_EQ(file.uint_at("u8"), 200u);
        EXPECT_EQ(file.at("i8").as_int64(), -2);
        EXPECT_EQ(file.uint_at("u16"), 0x1234u);
        EXPECT_EQ(file.at("i16").as_int64(), -1);
        EXPECT_EQ(file.uint_at("u32"), 4000000000u);
        EXPECT_EQ(file.at("i32").as_int64(), -7);
        EXPECT_EQ(file.float_at("f32"), 0.5);
        EXPECT_TRUE(file.at("bool").as_bool());
        EXPECT_EQ(file.string_at("general.architecture"), "bloom");
        EXPECT_EQ(file.uint_at("u64"), ~std::uint64_t{0});
        EXPECT_EQ(file.at("i64").as_int64(), -1);
        EXPECT_EQ(file.float_at("f64"), 1.5);
        const auto& strings = file.at("strings").as_array();
        ASSERT_EQ(strings.size(), 2u);
        EXPECT_EQ(file.at("strings").element_type, GgufValueType::String);
        EXPECT_EQ(strings[1].as_string(), "\xc3\xa9");
        EXPECT_EQ(file.at("ints").as_array()[2].as_uint64(), 0xffffffffu);
        EXPECT_TRUE(file.at("empty").as_array().empty());
        EXPECT_FALSE(file.at("unicode.\xe2\x82\xac").as_bool());
        EXPECT_EQ(file.alignment(), 32u);
        EXPECT_EQ(file.data_offset() % 32, 0u);

        ASSERT_EQ(file.tensors().size(), 2u);
        const vkf::GgufTensorInfo& a = file.tensor_at("a");
        EXPECT_EQ(a.shape(), (std::vector<std::uint64_t>{2, 3}));
        EXPECT_EQ(a.byte_size, 24u);
        const auto bytes = file.read_raw(a);
        float third = 0;
        std::memcpy(&third, bytes.data() + 8, 4);
        EXPECT_EQ(third, 2.0f);
        const vkf::GgufTensorInfo& b = file.tensor_at("b");
        EXPECT_EQ(b.type, GgmlType::Q8_0);
        EXPECT_EQ(b.byte_size, 34u);
        EXPECT_EQ(b.element_count(), 32u);
        EXPECT_EQ(file.read_raw(b)[33], std::byte{33});
    }
}

TEST_F(GgufTest, TypedLookupsNameTheKey) {
    const vkf::GgufFile file = vkf::open_gguf(write(good_file().bytes()));
    EXPECT_NE(vkf::test::error_message([&] { file.string_at("u8"); }).find("metadata key 'u8': expected a string"),
              std::string::npos);
    EXPECT_NE(vkf::test::error_message([&] { file.uint_at("i8"); }).find("non-negative"), std::string::npos);
    EXPECT_NE(vkf::test::error_message([&] { file.uint_at("nope"); }).find("no metadata key 'nope'"),
              std::string::npos);
    EXPECT_NE(vkf::test::error_message([&] { file.tensor_at("c"); }).find("no tensor 'c'"), std::string::npos);
}

TEST_F(GgufTest, HonoursGeneralAlignment) {
    GgufBytes g;
    g.header(1, 1).kv_u32("general.alignment", 64).tensor("t", {4}, 0, 0).pad(64);
    for (int i = 0; i < 4; ++i) {
        g.f32(1.0f);
    }
    const vkf::GgufFile file = vkf::open_gguf(write(g.bytes()));
    EXPECT_EQ(file.alignment(), 64u);
    EXPECT_EQ(file.data_offset(), 128u);

    GgufBytes bad;
    bad.header(0, 1).kv_u32("general.alignment", 48);
    expect_refused(bad.bytes(), {"general.alignment 48 is not a power of two"});
    GgufBytes wrong_type;
    wrong_type.header(0, 1).kv_f32("general.alignment", 32.0f);
    expect_refused(wrong_type.bytes(), {"general.alignment must be a uint32, got a float32"});
}

TEST_F(GgufTest, RefusesWhatIsNotALittleEndianGgufOfVersion2Or3) {
    expect_refused("GGU", {"at byte 0", "the file ends inside the magic"});
    expect_refused("GGML\x03\x00\x00\x00", {"not a GGUF file"});
    GgufBytes big;
    big.text("GGUF").u8(0).u8(0).u8(0).u8(3).u64(0).u64(0);
    expect_refused(big.bytes(), {"big-endian GGUF file (version 3 byte-swapped)"});
    GgufBytes v1;
    v1.header(0, 0, 1);
    expect_refused(v1.bytes(), {"GGUF version 1 is not read"});
}

TEST_F(GgufTest, RefusesTruncatedFilesAtEveryLength) {
    const std::string good = good_file().bytes();
    for (std::size_t n = 0; n + 1 < good.size(); n += (n < 400 ? 1 : 13)) {
        const std::string message = open_error(good.substr(0, n));
        EXPECT_NE(message.find("GGUF file '"), std::string::npos) << n << ": " << message;
    }
}

TEST_F(GgufTest, RefusesCountsAndLengthsTheFileCannotHold) {
    GgufBytes kv;
    kv.header(0, std::uint64_t{1} << 60);
    expect_refused(kv.bytes(), {"key/values claimed"});
    GgufBytes tensors;
    tensors.header(~std::uint64_t{0}, 0);
    expect_refused(tensors.bytes(), {"tensors claimed"});
    GgufBytes key;
    key.header(0, 1).u64(~std::uint64_t{0}).u64(0);
    expect_refused(key.bytes(), {"a metadata key has length 18446744073709551615"});
    GgufBytes value;
    value.header(0, 1).str("k").u32(8).u64(1000).text("abc");
    expect_refused(value.bytes(), {"the value of 'k' has length 1000, but only 3 bytes"});
    GgufBytes array;
    array.header(0, 1).str("k").u32(9).u32(4).u64(std::uint64_t{1} << 40).u32(1);
    expect_refused(array.bytes(), {"array 'k' claims 1099511627776 elements of uint32"});
    GgufBytes strings;
    strings.header(0, 1).str("k").u32(9).u32(8).u64(4).u64(0).u64(0).u64(0);
    expect_refused(strings.bytes(), {"array 'k' claims 4 elements of string"});
}

TEST_F(GgufTest, RefusesBadValues) {
    GgufBytes type;
    type.header(0, 1).str("k").u32(13).u32(0);
    expect_refused(type.bytes(), {"the type of 'k': unknown value type 13"});
    GgufBytes nested;
    nested.header(0, 1).str("k").u32(9).u32(9).u64(0);
    expect_refused(nested.bytes(), {"'k' is an array of arrays"});
    GgufBytes element;
    element.header(0, 1).str("k").u32(9).u32(77).u64(0);
    expect_refused(element.bytes(), {"element type of array 'k': unknown value type 77"});
    GgufBytes flag;
    flag.header(0, 1).str("k").u32(7).u8(2);
    expect_refused(flag.bytes(), {"the value of 'k': a bool must be 0 or 1, got 2"});
    GgufBytes key;
    key.header(0, 1).str("bad\xff").u32(7).u8(0);
    expect_refused(key.bytes(), {"a metadata key is not UTF-8 (byte 3 of it)"});
    GgufBytes twice;
    twice.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
    expect_refused(twice.bytes(), {"metadata key 'k' appears twice"});
}

TEST_F(GgufTest, RefusesBadTensorInfos) {
    const auto one = [](const std::string& name, const std::vector<std::uint64_t>& dims, std::uint32_t type,
                        std::uint64_t offset, std::size_t data) {
        GgufBytes g;
        g.header(1, 0).tensor(name, dims, type, offset).pad(32);
        return g.text(std::string(data, '\0')).bytes();
    };
    expect_refused(one("t", {1, 1, 1, 1, 1}, 0, 0, 4), {"tensor 't' has 5 dimensions, at most 4"});
    expect_refused(one("t", {4}, 4, 0, 16), {"tensor 't' has unknown ggml type 4"});
    expect_refused(one("t", {4}, 1000, 0, 16), {"unknown ggml type 1000"});
    expect_refused(one("t", {33}, 8, 0, 64), {"first dimension 33, not a multiple of its block size 32"});
    expect_refused(one("t", {1ull << 62, 1ull << 62}, 0, 0, 16), {"needs more than 2^64 bytes"});
    expect_refused(one("t", {1000}, 0, 0, 16), {"tensor 't' of type F32 and dimensions [1000] needs 4000 bytes"});
    expect_refused(one("t", {4}, 0, 8, 32), {"offset 8, not a multiple of the alignment 32"});
    expect_refused(one("t", {4}, 0, 32, 32), {"tensor 't' at data offset 32 with 16 bytes runs past the end"});
    expect_refused(one("t", {4}, 0, ~std::uint64_t{0} - 31, 32), {"runs past the end"});
    expect_refused(one("t\xc0\x80", {4}, 0, 0, 16), {"a tensor name is not UTF-8"});

    GgufBytes twice;
    twice.header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32).pad(32).text(std::string(64, '\0'));
    expect_refused(twice.bytes(), {"tensor 't' appears twice"});
    GgufBytes overlap;
    overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad(32).text(std::string(64, '\0'));
    expect_refused(overlap.bytes(), {"tensor 'b' at data bytes [32, 48) overlaps tensor 'a' at [0, 64)"});
    // An empty tensor between them used to hide the overlap: only neighbours were compared.
    GgufBytes hidden;
    hidden.header(3, 0).tensor("a", {16}, 0, 0).tensor("empty", {0}, 0, 32).tensor("b", {4}, 0, 32).pad(32);
    hidden.text(std::string(64, '\0'));
    expect_refused(hidden.bytes(), {"tensor 'b' at data bytes [32, 48) overlaps tensor 'a' at [0, 64)"});
}

TEST_F(GgufTest, ReadsEmptyTensorsAndScalars) {
    GgufBytes g;
    g.header(2, 0).tensor("empty", {0, 1ull << 62}, 0, 0).tensor("scalar", {}, 0, 0).pad(32).f32(3.0f);
    const vkf::GgufFile file = vkf::open_gguf(write(g.bytes()));
    EXPECT_EQ(file.tensor_at("empty").byte_size, 0u);
    EXPECT_EQ(file.tensor_at("scalar").byte_size, 4u);
    EXPECT_TRUE(file.tensor_at("scalar").shape().empty());
}

TEST_F(GgufTest, ReportsATruncationAfterOpening) {
    const std::string good = good_file().bytes();
    const fs::path path = write(good);
    const vkf::GgufFile file = vkf::open_gguf(path);
    fs::resize_file(path, good.size() - 10);
    const std::string message = vkf::test::error_message([&] { file.read_raw(file.tensor_at("b")); });
    EXPECT_NE(message.find("(reading tensor 'b')"), std::string::npos) << message;
}

TEST_F(GgufTest, RecognisesTheMagic) {
    EXPECT_TRUE(vkf::looks_like_gguf(write(good_file().bytes())));
    EXPECT_FALSE(vkf::looks_like_gguf(write("{}", "config.json")));
    EXPECT_FALSE(vkf::looks_like_gguf(dir_.path() / "absent.gguf"));
    EXPECT_FALSE(vkf::looks_like_gguf(dir_.path()));
}

}  // namespace
