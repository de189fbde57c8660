// The on-disk pipeline cache across process starts, and files it must not trust.

#include "runtime/pipeline_cache.hpp"
#include "tests/support/test_support.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#ifndef VKF_CACHE_PROBE
#error "VKF_CACHE_PROBE must be the command that starts cache_probe (its path, after an emulator in a cross-build)"
#endif

namespace vkf::test {
namespace {

std::map<std::string, std::string> run_probe(const std::filesystem::path& dir) {
    const std::string cmd = std::string(VKF_CACHE_PROBE) + " '" + dir.string() + "'";
    std::FILE* pipe = popen(cmd.c_str(), "r");
    std::map<std::string, std::string> out;
    if (pipe == nullptr) {
        ADD_FAILURE() << "cannot run " << cmd;
        return out;
    }
    char line[4096];
    while (std::fgets(line, sizeof line, pipe) != nullptr) {
        std::string s(line);
        if (!s.empty() && s.back() == '\n')
            s.pop_back();
        const auto eq = s.find('=');
        if (eq != std::string::npos) {
            out[s.substr(0, eq)] += (out.count(s.substr(0, eq)) ? "\n" : "") + s.substr(eq + 1);
        }
    }
    const int status = pclose(pipe);
    EXPECT_EQ(status, 0) << "cache_probe failed: " << out["error"];
    EXPECT_EQ(out.count("message"), 0u) << "messages: " << out["message"];
    EXPECT_EQ(out["result"], "4");  // the work itself is right whatever the cache did
    return out;
}

class PipelineCacheFiles : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("vkf-cache-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::filesystem::path dir_;
};

TEST_F(PipelineCacheFiles, SecondProcessCreatesPipelinesFromTheCache) {
    auto first = run_probe(dir_);
    EXPECT_EQ(first["loaded"], "0");
    EXPECT_EQ(first["created"], "3");
    ASSERT_TRUE(std::filesystem::exists(first["file"])) << first["file"];
    EXPECT_GT(std::filesystem::file_size(first["file"]), 56u);

    auto second = run_probe(dir_);
    EXPECT_EQ(second["loaded"], "1");
    EXPECT_NE(second["loaded_bytes"], "0");
    EXPECT_EQ(second["rejected"], "");
    // Some drivers keep nothing in their cache beyond its 32-byte header (lavapipe in Mesa
    // 22.3 compiles every time); where the driver stores data and reports hits, all must hit.
    if (second["hits_reported"] == "1" && std::stoull(second["loaded_bytes"]) > 32) {
        EXPECT_EQ(second["hits"], "3") << "every pipeline should come from the cache";
    } else {
        std::printf("note: this driver's pipeline cache holds %s bytes; hits reported: %s\n",
                    second["loaded_bytes"].c_str(), second["hits"].c_str());
    }
}

TEST_F(PipelineCacheFiles, CorruptTruncatedAndForeignFilesAreIgnored) {
    auto first = run_probe(dir_);
    const std::filesystem::path file = first["file"];
    ASSERT_TRUE(std::filesystem::exists(file));
    std::vector<char> good;
    {
        std::ifstream in(file, std::ios::binary);
        good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    auto write = [&](const std::vector<char>& bytes) {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };
    struct Case {
        const char* name;
        std::vector<char> bytes;
        const char* reason;
    };
    std::vector<Case> cases;
    cases.push_back({"garbage", std::vector<char>(1000, 'x'), "bad magic"});
    cases.push_back({"empty", {}, "shorter than its header"});
    cases.push_back({"truncated", std::vector<char>(good.begin(), good.end() - 10), "payload size"});
    auto flipped = good;
    flipped.back() ^= 0x5a;
    cases.push_back({"bit flip", flipped, "checksum"});
    auto foreign = good;
    foreign[40] ^= 0x01;  // the device UUID in vkformer's header
    cases.push_back({"foreign device", foreign, "another device"});
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        write(c.bytes);
        // The warning goes to the message callback; cache_probe prints it as "message=".
        const std::string cmd = std::string(VKF_CACHE_PROBE) + " '" + dir_.string() + "'";
        std::FILE* pipe = popen(cmd.c_str(), "r");
        ASSERT_NE(pipe, nullptr);
        std::string all;
        char line[4096];
        while (std::fgets(line, sizeof line, pipe) != nullptr)
            all += line;
        EXPECT_EQ(pclose(pipe), 0) << all;
        EXPECT_NE(all.find("result=4"), std::string::npos) << all;
        EXPECT_NE(all.find("loaded=0"), std::string::npos) << all;
        EXPECT_NE(all.find("ignoring pipeline cache"), std::string::npos) << all;
        EXPECT_NE(all.find(c.reason), std::string::npos) << all;
        // A good file replaces the bad one.
        auto again = run_probe(dir_);
        EXPECT_EQ(again["loaded"], "1");
    }
}

// The file check alone (validate_pipeline_cache_file, also fuzzed: tests/fuzz/pipeline_cache.cpp),
// on files written here as PipelineCache::save writes them.
class PipelineCacheFileCheck : public ::testing::Test {
protected:
    PipelineCacheFileCheck() {
        device_.vendor_id = 0x10005;
        device_.device_id = 7;
        device_.driver_version = 0x5803000;
        for (std::size_t i = 0; i < 16; ++i) {
            device_.device_uuid[i] = static_cast<std::uint8_t>(0x10 + i);
            device_.pipeline_cache_uuid[i] = static_cast<std::uint8_t>(0xa0 + i);
        }
    }

    template <class T>
    static void append(std::vector<char>& out, T value) {
        const auto* bytes = reinterpret_cast<const char*>(&value);
        out.insert(out.end(), bytes, bytes + sizeof value);
    }

    // vkformer's 56-byte header for this device, then `payload`.
    std::vector<char> wrap(const std::vector<char>& payload) const {
        std::uint64_t checksum = 0xcbf29ce484222325ull;  // FNV-1a 64
        for (const char c : payload) {
            checksum = (checksum ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
        }
        std::vector<char> out = {'V', 'K', 'F', 'P', 'I', 'P', 'E', '1'};
        append<std::uint64_t>(out, payload.size());
        append<std::uint64_t>(out, checksum);
        append<std::uint32_t>(out, device_.vendor_id);
        append<std::uint32_t>(out, device_.device_id);
        append<std::uint32_t>(out, device_.driver_version);
        append<std::uint32_t>(out, 0);
        out.insert(out.end(), device_.device_uuid.begin(), device_.device_uuid.end());
        out.insert(out.end(), payload.begin(), payload.end());
        return out;
    }

    // A whole file: the driver's 32-byte header for this device and `blob`, wrapped.
    std::vector<char> file(const std::string& blob) const {
        std::vector<char> payload;
        append<std::uint32_t>(payload, 32);
        append<std::uint32_t>(payload, VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
        append<std::uint32_t>(payload, device_.vendor_id);
        append<std::uint32_t>(payload, device_.device_id);
        payload.insert(payload.end(), device_.pipeline_cache_uuid.begin(), device_.pipeline_cache_uuid.end());
        payload.insert(payload.end(), blob.begin(), blob.end());
        return wrap(payload);
    }

    // Why the file is refused, or "" when it is accepted.
    std::string refusal(const std::vector<char>& bytes) const {
        std::vector<char> payload;
        const std::optional<std::string> reason = validate_pipeline_cache_file(bytes, device_, payload);
        return reason.value_or("");
    }

    static ::testing::AssertionResult says(const std::string& reason, const std::string& words) {
        if (reason.find(words) != std::string::npos) {
            return ::testing::AssertionSuccess();
        }
        return ::testing::AssertionFailure() << "refused with '" << reason << "', not '" << words << "'";
    }

    DeviceInfo device_;
};

TEST_F(PipelineCacheFileCheck, AcceptsAFileForThisDeviceAndHandsOverThePayload) {
    const std::vector<char> bytes = file("driver data");
    std::vector<char> payload;
    EXPECT_EQ(validate_pipeline_cache_file(bytes, device_, payload), std::nullopt);
    EXPECT_EQ(payload, std::vector<char>(bytes.begin() + 56, bytes.end()));
    EXPECT_EQ(refusal(file("")), "");  // the driver's header alone
}

TEST_F(PipelineCacheFileCheck, RefusesWhatItMustNotTrust) {
    const std::vector<char> good = file("0123456789");
    EXPECT_TRUE(says(refusal({}), "shorter than its header"));
    EXPECT_TRUE(says(refusal(std::vector<char>(good.begin(), good.begin() + 55)), "shorter than its header"));
    std::vector<char> magic = good;
    magic[0] = 'X';
    EXPECT_TRUE(says(refusal(magic), "bad magic"));
    EXPECT_TRUE(says(refusal(std::vector<char>(good.begin(), good.end() - 1)), "payload size"));
    std::vector<char> longer = good;
    longer.push_back('x');
    EXPECT_TRUE(says(refusal(longer), "payload size"));
    std::vector<char> flipped = good;
    flipped.back() ^= 0x5a;
    EXPECT_TRUE(says(refusal(flipped), "checksum"));
    for (const std::size_t field : {24u, 28u, 32u, 40u, 55u}) {  // vendor, device, driver, UUID
        std::vector<char> foreign = good;
        foreign[field] ^= 0x01;
        EXPECT_TRUE(says(refusal(foreign), "another device or driver version")) << field;
    }
    // vkformer's header is right, the driver's is too short or not for this device.
    EXPECT_TRUE(says(refusal(wrap(std::vector<char>(31, 'x'))), "driver data too short"));
    DeviceInfo other = device_;
    other.pipeline_cache_uuid[3] ^= 0xff;
    std::vector<char> payload;
    EXPECT_TRUE(
        says(validate_pipeline_cache_file(good, other, payload).value_or(""), "driver data is for another device"));
    EXPECT_TRUE(payload.empty());
}

}  // namespace
}  // namespace vkf::test
