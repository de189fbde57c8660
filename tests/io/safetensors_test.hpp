#pragma once
// What the safetensors suites (test_safetensors.cpp, test_safetensors_errors.cpp) share: a
// fixture that writes files, raw or from header text and data, into a directory of its own,
// and checks the errors that opening them gives.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/io/safetensors.hpp"
#include "tests/support/test_support.hpp"

namespace vkf::test {

inline std::string bytes_of(std::span<const float> values) {
    std::string bytes(values.size() * 4, '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

class SafetensorsTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::random_device entropy;
        const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
        dir_ = std::filesystem::temp_directory_path() /
               ("vkf_test_safetensors_" + std::to_string(stamp) + "_" + std::to_string(entropy()));
        std::filesystem::create_directories(dir_);
    }

    void TearDown() override {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }

    std::filesystem::path path(const std::string& name) const { return dir_ / name; }

    std::filesystem::path write_bytes(const std::string& name, const std::string& bytes) const {
        const std::filesystem::path file = path(name);
        std::filesystem::create_directories(file.parent_path());
        std::ofstream out(file, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return file;
    }

    // A safetensors file from header text and data bytes; the length field is the
    // header's size unless overridden.
    std::filesystem::path write_file(const std::string& name, const std::string& header, const std::string& data,
                                     std::optional<std::uint64_t> header_length = std::nullopt) const {
        const std::uint64_t length = header_length.value_or(header.size());
        std::string bytes;
        for (int i = 0; i < 8; ++i) {
            bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
        }
        return write_bytes(name, bytes + header + data);
    }

    // The message of the vkf::Error that opening `file` throws.
    static std::string open_error(const std::filesystem::path& file) {
        return vkf::test::error_message([&] { vkf::open_safetensors(file); });
    }

    // Opening must fail with a message naming the file and containing every fragment.
    void expect_refused(const std::string& header, const std::string& data, std::vector<std::string> fragments,
                        std::optional<std::uint64_t> header_length = std::nullopt) {
        const std::filesystem::path file =
            write_file("case_" + std::to_string(case_counter_++) + ".safetensors", header, data, header_length);
        const std::string message = open_error(file);
        EXPECT_NE(message.find(file.string()), std::string::npos) << message;
        for (const std::string& fragment : fragments) {
            EXPECT_NE(message.find(fragment), std::string::npos)
                << "header: " << header << "\nmessage: " << message << "\nmissing: " << fragment;
        }
    }

    std::filesystem::path dir_;
    int case_counter_ = 0;
};

}  // namespace vkf::test
