// safetensors files that must be refused, one test per kind of malformed file (header
// lengths, JSON, entries, offsets, sharded checkpoints), each checking that the error names
// the file and the tensor.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/io/safetensors.hpp"
#include "tests/io/safetensors_test.hpp"
#include "tests/support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::test::bytes_of;
using vkf::test::SafetensorsTest;

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

// A name that is there but cannot be followed is named with the reason, not taken for absent:
// a loop of symbolic links as model.safetensors was reported as "has neither model.safetensors
// nor model.safetensors.index.json".
TEST_F(SafetensorsTest, NamesCheckpointFilesThatCannotBeFollowed) {
    const auto error_of = [](const fs::path& p) { return vkf::test::error_message([&] { vkf::open_checkpoint(p); }); };
    fs::create_directories(path("loop"));
    fs::create_symlink("model.safetensors", path("loop/model.safetensors"));
    std::string message = error_of(path("loop"));
    EXPECT_NE(message.find("checkpoint file '" + path("loop/model.safetensors").string() + "' cannot be read: "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("symbolic link"), std::string::npos) << message;
    EXPECT_EQ(message.find("has neither"), std::string::npos) << message;

    fs::create_directories(path("dangling"));
    fs::create_symlink("nowhere.safetensors", path("dangling/model.safetensors.index.json"));
    message = error_of(path("dangling"));
    EXPECT_NE(message.find("checkpoint index '" + path("dangling/model.safetensors.index.json").string() +
                           "' cannot be read: "),
              std::string::npos)
        << message;

    // The checkpoint given as a loop itself, and a shard that is one.
    fs::create_symlink("self", path("self"));
    message = error_of(path("self"));
    EXPECT_NE(message.find("checkpoint '" + path("self").string() + "' cannot be read: "), std::string::npos)
        << message;
    fs::create_directories(path("shards"));
    fs::create_symlink("part-a.safetensors", path("shards/part-a.safetensors"));
    write_bytes("shards/model.safetensors.index.json", R"({"weight_map": {"x": "part-a.safetensors"}})");
    message = error_of(path("shards"));
    EXPECT_NE(
        message.find("tensor 'x': shard file '" + path("shards/part-a.safetensors").string() + "' cannot be read: "),
        std::string::npos)
        << message;
}

}  // namespace
