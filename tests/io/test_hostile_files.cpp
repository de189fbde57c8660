// Files as a hostile user hands them over (issue 16): FIFOs and directories where files are
// expected, checkpoints truncated while they are read, shards reached through symbolic
// links, JSON built to amplify memory, sizes that wrap 64-bit arithmetic, and a full disk
// under every writer. Each test failed (hung, crashed or lost data) before its fix.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/files.hpp"
#include "host/io/json.hpp"
#include "host/io/npy.hpp"
#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "host/io/text_file.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/support/small_models.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::test::directory_listing;
using vkf::test::error_message;
using vkf::test::full_disk_error;
using vkf::test::TempDir;

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void make_fifo(const fs::path& path) {
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
}

// Every reader refuses a FIFO at once (opening one for reading used to wait for a writer
// forever) and a directory by name (it used to end in std::bad_alloc or a stream error).
TEST(HostileFiles, FifosAndDirectoriesAreRefusedWithoutBlocking) {
    TempDir dir("vkf_hostile_fifo");
    const fs::path fifo = dir.path() / "model.safetensors";
    make_fifo(fifo);
    const auto refused_as_fifo = [&](const std::function<void()>& read) {
        const std::string e = error_message(read);
        EXPECT_TRUE(contains(e, fifo.string()) && contains(e, "is a FIFO (named pipe), not a regular file")) << e;
    };
    refused_as_fifo([&] { vkf::open_safetensors(fifo); });
    refused_as_fifo([&] { vkf::open_checkpoint(dir.path()); });
    refused_as_fifo([&] { vkf::read_json_file(fifo); });
    refused_as_fifo([&] { vkf::read_model_config(fifo); });
    refused_as_fifo([&] { vkf::read_text_file(fifo); });
    refused_as_fifo([&] { vkf::read_npy(fifo); });

    const fs::path sub = dir.path() / "q.npy";
    fs::create_directory(sub);
    const std::string e = error_message([&] { vkf::read_npy(sub); });
    EXPECT_EQ(e, "npy file '" + sub.string() + "' is a directory, not a regular file");
    EXPECT_TRUE(contains(error_message([&] { vkf::read_text_file(sub); }), "is a directory")) << e;
}

// A checkpoint truncated after it was opened (another process rewriting it during a load)
// used to kill the reader with SIGBUS through the memory mapping.
TEST(HostileFiles, CheckpointTruncatedWhileReadIsAnErrorNamingTheFile) {
    TempDir dir("vkf_hostile_truncated");
    vkf::write_random_checkpoint(dir.path(), vkf::test::small_bloom(), 1, vkf::DType::F32);
    const fs::path file = dir.path() / "model.safetensors";
    const vkf::SafetensorsFile st = vkf::open_safetensors(file);
    const vkf::TensorInfo& last = st.tensors().back();
    fs::resize_file(file, fs::file_size(file) / 2);
    const std::string e = error_message([&] { (void)st.read_as_f32(last); });
    EXPECT_TRUE(contains(e, "safetensors file '" + file.string() + "'")) << e;
    EXPECT_TRUE(contains(e, "it was truncated while being read")) << e;
    EXPECT_TRUE(contains(e, "reading tensor '" + last.name + "'")) << e;
}

// A shard whose directory is a symbolic link out of the checkpoint passed the lexical
// check and loaded. A shard file that is itself a link (the Hugging Face cache's layout)
// still loads.
TEST(HostileFiles, ShardsThroughSymlinkedDirectoriesAreRefused) {
    TempDir outside("vkf_hostile_outside");
    TempDir dir("vkf_hostile_escape");
    vkf::write_random_checkpoint(outside.path(), vkf::test::small_bloom(), 1, vkf::DType::F32, 2);
    fs::create_directory_symlink(outside.path(), dir.path() / "escape");
    const std::string index = slurp(outside.path() / "model.safetensors.index.json");
    std::string escaped = index;
    for (std::size_t at = 0; (at = escaped.find("\"model-0000", at)) != std::string::npos; at += 8) {
        escaped.insert(at + 1, "escape/");
    }
    vkf::write_file_atomically(dir.path() / "model.safetensors.index.json", escaped, "index");
    const std::string e = error_message([&] { vkf::open_checkpoint(dir.path()); });
    EXPECT_TRUE(contains(e, "outside the checkpoint directory")) << e;
    EXPECT_TRUE(contains(e, "(through a symbolic link)")) << e;

    TempDir cache("vkf_hostile_hub_cache");
    for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
        fs::create_symlink(outside.path() / shard, cache.path() / shard);
    }
    vkf::write_file_atomically(cache.path() / "model.safetensors.index.json", index, "index");
    EXPECT_EQ(vkf::open_checkpoint(cache.path()).files().size(), 2u);
}

// Bytes the allocator holds for live objects (glibc's count: the arenas plus the blocks it
// maps on its own, as large vectors are; ASan replaces the allocator).
std::size_t heap_in_use() {
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

// A 200k-element array under a 4 KiB key: every element used to carry a copy of its path
// (4 KiB each, 800 MB in all). The parsed document must stay a small multiple of its text.
TEST(HostileFiles, JsonMemoryIsBoundedByASmallMultipleOfItsText) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "ASan's allocator does not report through mallinfo2";
#endif
    std::string text = "{\"" + std::string(4096, 'k') + "\": [0";
    for (int i = 1; i < 200000; ++i) {
        text += ",0";
    }
    text += "]}";
    const std::size_t before = heap_in_use();
    const vkf::JsonValue document = vkf::parse_json(text, "config.json");
    const std::size_t used = heap_in_use() - before;
    EXPECT_LT(used, 48 * text.size()) << used << " bytes for a " << text.size() << "-byte document";
    // Paths are still exact in messages.
    const std::string e = error_message([&] { document.as_object()[0].value.at(std::size_t{199999}).as_string(); });
    EXPECT_EQ(e, "config.json: " + std::string(4096, 'k') + "[199999]: expected a string, got number 0");
}

// Sizes that used to wrap: BLOOM's 4 * hidden in 32 bits, a zero dimension after huge ones.
TEST(HostileFiles, SizesThatWrapAreRefusedWithTheRightNumbers) {
    const std::string bloom = vkf::hf_config_json(vkf::test::small_bloom(), vkf::DType::F32);
    std::string huge = bloom;
    huge.replace(huge.find("\"hidden_size\": 256"), 18, "\"hidden_size\": 1073741824");
    const std::string e = error_message([&] { vkf::parse_model_config(huge); });
    EXPECT_TRUE(contains(e, "BLOOM's MLP width 4 * 1073741824 = 4294967296 is over vkformer's limit")) << e;

    std::string layers = bloom;
    layers.replace(layers.find("\"n_layer\": 2"), 12, "\"n_layer\": 1000000");
    const auto start = std::chrono::steady_clock::now();
    const std::string l = error_message([&] { vkf::parse_model_config(layers); });
    EXPECT_TRUE(contains(l, "n_layer 1000000 is over vkformer's limit of 1024")) << l;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

    // [2^63, 2, 0] holds no bytes; it used to be described as needing more than 2^64.
    TempDir dir("vkf_hostile_shape");
    const std::string header = R"({"empty": {"dtype": "F32", "shape": [9223372036854775808, 2, 0], )"
                               R"("data_offsets": [0, 0]}})";
    std::string file(8, '\0');
    for (int i = 0; i < 8; ++i) {
        file[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    }
    vkf::write_file_atomically(dir.path() / "empty.safetensors", file + header, "test file");
    const vkf::SafetensorsFile st = vkf::open_safetensors(dir.path() / "empty.safetensors");
    EXPECT_EQ(st.tensor_info("empty").byte_size(), 0u);
}

// Every writer on a full disk: an error naming the file, no file under the final name (or
// the previous one intact) and no temporary left behind. Saving used to report nothing and
// leave truncated files.
TEST(HostileFiles, FullDiskLeavesNoTruncatedFileUnderAnyName) {
    TempDir dir("vkf_hostile_full");
    const std::vector<float> values(100000, 1.5f);
    const std::size_t shape[] = {values.size()};
    std::string e = full_disk_error(4096, [&] { vkf::write_npy_f32(dir.path() / "out.npy", shape, values); });
    EXPECT_TRUE(contains(e, "npy file '" + (dir.path() / "out.npy").string() + "': write failed: File too large")) << e;
    EXPECT_TRUE(directory_listing(dir.path()).empty());

    vkf::write_file_atomically(dir.path() / "config.json", "{\"old\": true}", "config");
    e = full_disk_error(4, [&] { vkf::write_text_file(dir.path() / "config.json", std::string(100, ' ')); });
    EXPECT_TRUE(contains(e, "write failed")) << e;
    EXPECT_EQ(slurp(dir.path() / "config.json"), "{\"old\": true}");
    EXPECT_EQ(directory_listing(dir.path()), std::vector<std::string>{"config.json"});

    const fs::path model = dir.path() / "model";
    e = full_disk_error(300000,
                        [&] { vkf::write_random_checkpoint(model, vkf::test::small_bloom(), 1, vkf::DType::F32, 3); });
    EXPECT_TRUE(contains(e, "safetensors file '") && contains(e, "write failed: File too large")) << e;
    EXPECT_TRUE(directory_listing(model).empty()) << fmt::format("{}", fmt::join(directory_listing(model), ", "));
}

// A request the disk cannot hold is refused before anything is written (a 35 TB checkpoint
// used to be generated until the disk filled).
TEST(HostileFiles, CheckpointsLargerThanTheFreeSpaceAreRefusedUpFront) {
    TempDir dir("vkf_hostile_huge");
    vkf::ModelConfig config = vkf::test::small_bloom();
    config.vocab_size = 1u << 24;
    config.hidden = 1u << 17;
    config.n_head = 1024;
    config.n_kv_head = 1024;
    config.head_dim = 128;
    config.ffn_hidden = 1u << 19;
    const auto start = std::chrono::steady_clock::now();
    const std::string e =
        error_message([&] { vkf::write_random_checkpoint(dir.path() / "m", config, 1, vkf::DType::F16); });
    EXPECT_TRUE(contains(e, "needs") && contains(e, "TiB but the file system of")) << e;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_FALSE(fs::exists(dir.path() / "m" / "model.safetensors"));
}

}  // namespace
