// GGUF files written by write_gguf_file (host/io/gguf_writer.hpp), read back by open_gguf; and the
// writer's refusals: bad metadata or tensors, an unwritable output and a full disk, each leaving
// no file behind. gguf_write_compare.py reads the same sample with llama.cpp's gguf-py.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "host/io/gguf.hpp"
#include "host/io/gguf_writer.hpp"
#include "tests/io/gguf_writer_sample.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::GgmlType;
using vkf::GgufValueType;

class GgufWriterTest : public ::testing::Test {
protected:
    vkf::test::TempDir dir_{"vkf_test_gguf_writer"};
};

// A scalar value as text, to compare values of any type.
std::string scalar_text(const vkf::GgufValue& value) {
    if (const auto* u = std::get_if<std::uint64_t>(&value.value)) {
        return fmt::format("u{}", *u);
    }
    if (const auto* i = std::get_if<std::int64_t>(&value.value)) {
        return fmt::format("i{}", *i);
    }
    if (const auto* d = std::get_if<double>(&value.value)) {
        return fmt::format("f{}", *d);
    }
    if (const auto* b = std::get_if<bool>(&value.value)) {
        return fmt::format("b{}", *b);
    }
    return "s" + value.as_string();
}

void expect_contains(const std::string& message, const std::vector<std::string>& parts) {
    for (const std::string& part : parts) {
        EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
}

TEST_F(GgufWriterTest, WritesWhatTheReaderReadsAtEveryAlignment) {
    for (const std::uint32_t alignment : {0u, 64u, 256u}) {
        SCOPED_TRACE(alignment);
        const auto sample = vkf::test::gguf_writer_sample(alignment);
        const fs::path path = dir_.path() / "sample.gguf";
        std::vector<std::uint64_t> progress;
        vkf::write_gguf_file(path, sample.metadata, sample.tensors,
                             [&](const vkf::CheckpointWriteProgress& p) { progress.push_back(p.bytes_done); });
        const vkf::GgufFile file = vkf::open_gguf(path);
        const std::uint64_t expected_alignment = alignment == 0 ? 32 : alignment;
        EXPECT_EQ(file.version(), 3u);
        EXPECT_EQ(file.alignment(), expected_alignment);
        EXPECT_EQ(file.data_offset() % expected_alignment, 0u);
        ASSERT_EQ(file.metadata().size(), sample.metadata.size());
        for (std::size_t i = 0; i < sample.metadata.size(); ++i) {
            const vkf::GgufKeyValue& got = file.metadata()[i];
            const vkf::GgufKeyValue& want = sample.metadata[i];
            EXPECT_EQ(got.key, want.key);
            EXPECT_EQ(got.value.type, want.value.type) << want.key;
            if (want.value.is_array()) {
                EXPECT_EQ(got.value.element_type, want.value.element_type) << want.key;
                ASSERT_EQ(got.value.as_array().size(), want.value.as_array().size()) << want.key;
                for (std::size_t e = 0; e < want.value.as_array().size(); ++e) {
                    EXPECT_EQ(scalar_text(got.value.as_array()[e]), scalar_text(want.value.as_array()[e])) << want.key;
                }
            } else if (want.value.type == GgufValueType::F32) {
                EXPECT_EQ(got.value.as_double(), static_cast<float>(want.value.as_double())) << want.key;
            } else {
                EXPECT_EQ(scalar_text(got.value), scalar_text(want.value)) << want.key;
            }
        }
        ASSERT_EQ(file.tensors().size(), sample.tensors.size());
        for (std::size_t t = 0; t < sample.tensors.size(); ++t) {
            const vkf::GgufTensorInfo& info = file.tensors()[t];
            EXPECT_EQ(info.name, sample.tensors[t].name);
            EXPECT_EQ(info.dims, sample.tensors[t].dims);
            EXPECT_EQ(info.type, sample.tensors[t].type);
            EXPECT_EQ(info.offset % expected_alignment, 0u) << info.name;
            const std::vector<std::byte> bytes = file.read_raw(info);
            ASSERT_EQ(bytes.size(), vkf::gguf_tensor_bytes(sample.tensors[t]));
            for (std::size_t i = 0; i < bytes.size(); ++i) {
                ASSERT_EQ(bytes[i], vkf::test::sample_byte(i, t)) << info.name << " byte " << i;
            }
        }
        ASSERT_FALSE(progress.empty());
        EXPECT_EQ(progress.back(), file.file_size() - file.data_offset());
    }
}

TEST_F(GgufWriterTest, WritesBigTensorsABandAtATime) {
    // 3 bands of kGgufWriteBandBytes and a remainder: every row produced once, in order.
    const std::uint64_t row = 4096;  // F32 elements: 16 KiB a row
    const std::uint64_t rows = 3 * vkf::kGgufWriteBandBytes / (row * 4) + 5;
    std::uint64_t next = 0, most = 0;
    const vkf::GgufTensorSource tensor{.name = "big",
                                       .dims = {row, rows},
                                       .type = GgmlType::F32,
                                       .fill = [&](std::uint64_t first, std::uint64_t n, std::span<std::byte> out) {
                                           EXPECT_EQ(first, next);
                                           next = first + n;
                                           most = std::max<std::uint64_t>(most, out.size());
                                           std::fill(out.begin(), out.end(), static_cast<std::byte>(first % 251));
                                       }};
    const fs::path path = dir_.path() / "big.gguf";
    vkf::write_gguf_file(path, {}, std::span(&tensor, 1));
    EXPECT_EQ(next, rows);
    EXPECT_LE(most, vkf::kGgufWriteBandBytes);
    const vkf::GgufFile file = vkf::open_gguf(path);
    EXPECT_EQ(file.tensors()[0].byte_size, row * rows * 4);
}

TEST_F(GgufWriterTest, RefusesBadMetadataAndTensors) {
    const fs::path path = dir_.path() / "bad.gguf";
    const auto error = [&](std::vector<vkf::GgufKeyValue> metadata, std::vector<vkf::GgufTensorSource> tensors) {
        return vkf::test::error_message([&] { vkf::write_gguf_file(path, metadata, tensors); });
    };
    const auto fill = [](std::uint64_t, std::uint64_t, std::span<std::byte>) {};
    expect_contains(error({{"a", vkf::gguf_bool(true)}, {"a", vkf::gguf_bool(false)}}, {}),
                    {"GGUF file '", "metadata key 'a' is empty or given twice"});
    expect_contains(error({{"general.alignment", vkf::gguf_uint32(48)}}, {}),
                    {"general.alignment must be a uint32 power of two"});
    expect_contains(error({{"general.alignment", vkf::gguf_int32(64)}}, {}),
                    {"general.alignment must be a uint32 power of two"});
    expect_contains(error({}, {{.name = "q", .dims = {33, 2}, .type = GgmlType::Q8_0, .fill = fill}}),
                    {"tensor 'q': rows of 33 elements cannot be stored as Q8_0 (blocks of 32)"});
    expect_contains(error({}, {{.name = "t", .dims = {32}, .type = GgmlType::F32, .fill = fill},
                               {.name = "t", .dims = {32}, .type = GgmlType::F32, .fill = fill}}),
                    {"tensor 't' given twice"});
    expect_contains(error({}, {{.name = "five", .dims = {1, 1, 1, 1, 1}, .type = GgmlType::F32, .fill = fill}}),
                    {"tensor 'five': 5 dimensions"});
    EXPECT_FALSE(fs::exists(path));
}

TEST_F(GgufWriterTest, ReportsUnwritableOutputsAndFullDisksLeavingNoFile) {
    const auto sample = vkf::test::gguf_writer_sample(64);
    const fs::path missing = dir_.path() / "missing" / "x.gguf";
    expect_contains(vkf::test::error_message([&] { vkf::write_gguf_file(missing, sample.metadata, sample.tensors); }),
                    {missing.parent_path().string()});
    const fs::path full = dir_.path() / "full.gguf";
    const std::string message =
        vkf::test::full_disk_error(4096, [&] { vkf::write_gguf_file(full, sample.metadata, sample.tensors); });
    expect_contains(message, {"GGUF file", full.string()});
    EXPECT_EQ(vkf::test::directory_listing(dir_.path()), std::vector<std::string>{});
    if (fs::exists("/dev/full")) {
        expect_contains(
            vkf::test::error_message([&] { vkf::write_gguf_file("/dev/full", sample.metadata, sample.tensors); }),
            {"/dev/full", "No space left on device"});
    }
    // A producer that fails (a tensor that cannot be converted) leaves no file either.
    std::vector<vkf::GgufTensorSource> tensors = sample.tensors;
    tensors[2].fill = [](std::uint64_t, std::uint64_t, std::span<std::byte>) {
        throw vkf::Error("tensor 't.q8_0': cannot convert");
    };
    expect_contains(vkf::test::error_message([&] { vkf::write_gguf_file(full, sample.metadata, tensors); }),
                    {"cannot convert"});
    EXPECT_EQ(vkf::test::directory_listing(dir_.path()), std::vector<std::string>{});
}

}  // namespace
