// The handshake's fingerprint (host/dist/fingerprint.hpp): it follows config.json and every
// tensor header but not the tensor data, and compare_fingerprints names the ranks that differ.

#include "host/dist/fingerprint.hpp"
#include "host/io/safetensors_writer.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace vkf::dist {
namespace {

// A "checkpoint" of two tensors; `fill` sets their values, `rows` the first one's shape.
void write_model(const std::filesystem::path& dir, float fill, std::size_t rows = 3,
                 const std::string& config = R"({"model_type": "bloom"})") {
    std::filesystem::create_directories(dir);
    write_text_file(dir / "config.json", config);
    const auto constant = [fill](std::uint64_t, std::span<float> out) { std::fill(out.begin(), out.end(), fill); };
    const std::vector<TensorSource> tensors{{"a.weight", {rows, 5}, constant}, {"b.bias", {7}, constant}};
    write_safetensors_checkpoint(dir, tensors, DType::F32);
}

TEST(Fingerprint, FollowsHeadersAndConfigNotData) {
    test::TempDir tmp("vkf_fingerprint");
    write_model(tmp.path() / "m", 1.0f);
    const Fingerprint base = fingerprint(tmp.path() / "m", "auto", "kv f16");
    EXPECT_EQ(base.split, "auto");
    EXPECT_EQ(base.options, "kv f16");
    EXPECT_EQ(base.config.size(), 16u);

    write_model(tmp.path() / "data", 2.0f);  // other values, same headers
    const Fingerprint data = fingerprint(tmp.path() / "data", "auto", "kv f16");
    EXPECT_EQ(data.checkpoint, base.checkpoint);
    EXPECT_EQ(data.config, base.config);

    write_model(tmp.path() / "shape", 1.0f, 4);  // one tensor's shape differs
    EXPECT_NE(fingerprint(tmp.path() / "shape", "auto", "").checkpoint, base.checkpoint);

    write_model(tmp.path() / "config", 1.0f, 3, R"({"model_type": "mpt"})");
    const Fingerprint config = fingerprint(tmp.path() / "config", "auto", "");
    EXPECT_NE(config.config, base.config);
    EXPECT_EQ(config.checkpoint, base.checkpoint);
}

TEST(Fingerprint, ComparisonNamesTheRanksThatDiffer) {
    const Fingerprint a{.version = "v", .config = "c", .checkpoint = "k", .split = "auto", .options = "o"};
    Fingerprint b = a;
    b.split = "1,2";
    EXPECT_EQ(compare_fingerprints(std::vector<Fingerprint>{a, a, a}), "");
    EXPECT_EQ(compare_fingerprints(std::vector<Fingerprint>{a, b, a}),
              "the split differs: ranks 0, 2 have 'auto'; rank 1 has '1,2'");
    Fingerprint c = a;
    c.checkpoint = "other";
    const std::string both = compare_fingerprints(std::vector<Fingerprint>{a, b, c});
    EXPECT_NE(both.find("the checkpoint (hash of its index and tensor headers) differs: ranks 0, 1 have 'k'; rank 2 "
                        "has 'other'"),
              std::string::npos)
        << both;
    EXPECT_NE(both.find("the split differs: ranks 0, 2 have 'auto'; rank 1 has '1,2'"), std::string::npos) << both;
}

TEST(Fingerprint, JsonRoundTripAndRefusal) {
    const Fingerprint a{.version = "v",
                        .config = "c",
                        .checkpoint = "k",
                        .split = "2,1",
                        .options = "o",
                        .device = {.host = "h", .name = "gpu", .uuid = "00ff", .budget = 1ull << 40}};
    const Fingerprint b = fingerprint_from_json(json_text(to_json(a), JsonStyle::Compact));
    EXPECT_EQ(compare_fingerprints(std::vector<Fingerprint>{a, b}), "");
    EXPECT_EQ(b.device.host, "h");
    EXPECT_EQ(b.device.name, "gpu");
    EXPECT_EQ(b.device.uuid, "00ff");
    EXPECT_EQ(b.device.budget, 1ull << 40);
    EXPECT_NE(test::error_message([] { fingerprint_from_json("{\"version\": 1}"); }).find("not a vkformer fingerprint"),
              std::string::npos);
}

// `--split auto` plans with each rank's share of its device: ranks on one host with the same
// device (name and UUID) split its budget; the device is never compared.
TEST(Fingerprint, RanksOnOneDeviceShareItsBudget) {
    const auto rank = [](std::string host, std::string uuid, std::uint64_t budget) {
        return Fingerprint{
            .version = "v",
            .config = "c",
            .checkpoint = "k",
            .split = "auto",
            .options = "o",
            .device = {.host = std::move(host), .name = "gpu", .uuid = std::move(uuid), .budget = budget}};
    };
    const std::vector<Fingerprint> ranks{rank("a", "01", 900), rank("a", "01", 600), rank("a", "02", 500),
                                         rank("b", "01", 400), rank("a", "01", 300)};
    EXPECT_EQ(shared_budgets(ranks), (std::vector<std::uint64_t>{300, 200, 500, 400, 100}));
    EXPECT_EQ(compare_fingerprints(ranks), "");
}

}  // namespace
}  // namespace vkf::dist
