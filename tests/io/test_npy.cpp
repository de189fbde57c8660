// .npy reading and writing: round trips for every dtype and several shapes, fp16
// conversion, files written by hand in each supported version, and one test per kind of
// malformed file, each checking that the error names the file and the problem.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/npy.hpp"
#include "host/util/half.hpp"

namespace {

namespace fs = std::filesystem;
using vkf::DType;

class NpyTest : public ::testing::Test {
protected:
    void SetUp() override {
        // Unique per process and test, so parallel test runs do not collide.
        std::random_device entropy;
        const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
        dir_ = fs::temp_directory_path() / ("vkf_test_npy_" + std::to_string(stamp) + "_" + std::to_string(entropy()));
        fs::create_directories(dir_);
    }

    void TearDown() override {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    fs::path file(const std::string& name) const { return dir_ / name; }

    fs::path write_bytes(const std::string& name, const std::string& bytes) const {
        const fs::path path = file(name);
        std::ofstream out(path, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return path;
    }

    // A file with the given format version, header text and data bytes; the header length
    // field is computed unless overridden.
    fs::path write_npy_file(const std::string& name, const std::string& header, const std::string& data,
                            unsigned major = 1, std::optional<std::uint32_t> header_length = std::nullopt) const {
        std::string bytes = "\x93NUMPY";
        bytes.push_back(static_cast<char>(major));
        bytes.push_back(0);
        const std::uint32_t length = header_length.value_or(static_cast<std::uint32_t>(header.size()));
        for (unsigned i = 0; i < (major == 1 ? 2u : 4u); ++i) {
            bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xffu));
        }
        return write_bytes(name, bytes + header + data);
    }

    fs::path dir_;
};

std::vector<std::byte> pattern_bytes(std::size_t n) {
    std::vector<std::byte> bytes(n);
    for (std::size_t i = 0; i < n; ++i) {
        bytes[i] = static_cast<std::byte>((i * 37 + 11) & 0xffu);
    }
    return bytes;
}

std::string float_bytes(std::initializer_list<float> values) {
    std::string bytes;
    for (float value : values) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &value, 4);
        for (int i = 0; i < 4; ++i) {
            bytes.push_back(static_cast<char>((bits >> (8 * i)) & 0xffu));
        }
    }
    return bytes;
}

void expect_read_error(const fs::path& path, const std::string& problem) {
    try {
        vkf::read_npy(path);
        ADD_FAILURE() << "no vkf::Error for " << path << "; expected '" << problem << "'";
    } catch (const vkf::Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(path.string()), std::string::npos) << "file not named: " << message;
        EXPECT_NE(message.find(problem), std::string::npos) << message;
    }
}

TEST_F(NpyTest, RoundTripEveryDtypeAndShape) {
    const std::vector<std::vector<std::size_t>> shapes = {
        {}, {1}, {7}, {3, 5}, {2, 7, 8, 4}, {0}, {4, 0, 3}, {1, 1, 1, 1, 1},
    };
    for (DType dtype : {DType::F32, DType::F16, DType::I32, DType::U32, DType::I64}) {
        for (const std::vector<std::size_t>& shape : shapes) {
            std::size_t count = 1;
            for (std::size_t dim : shape) {
                count *= dim;
            }
            const std::vector<std::byte> data = pattern_bytes(count * vkf::element_size(dtype));
            const fs::path path = file("round_trip.npy");
            vkf::write_npy(path, dtype, shape, data);

            // The data starts at a multiple of 64 bytes, as the format asks.
            const std::size_t header_end = fs::file_size(path) - data.size();
            EXPECT_EQ(header_end % 64, 0u) << vkf::shape_text(shape);

            const vkf::NpyArray array = vkf::read_npy(path);
            EXPECT_EQ(array.dtype, dtype);
            EXPECT_EQ(array.shape, shape);
            EXPECT_EQ(array.element_count(), count);
            EXPECT_EQ(array.data, data) << vkf::npy_descr(dtype) << " " << vkf::shape_text(shape);
        }
    }
}

TEST_F(NpyTest, WrittenHeaderIsWhatNumpyWrites) {
    const std::vector<std::size_t> shape = {2, 3};
    const std::vector<std::byte> data = pattern_bytes(24);
    const fs::path path = file("header.npy");
    vkf::write_npy(path, DType::F32, shape, data);

    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // 10 bytes of preamble + 59 of dictionary + '\n' = 70, padded to 128.
    ASSERT_EQ(bytes.size(), 128u + 24u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    EXPECT_EQ(static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8), 118);
    const std::string header = bytes.substr(10, 118);
    EXPECT_EQ(header.substr(0, header.find('}') + 1), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    EXPECT_EQ(header.back(), '\n');

    const fs::path one_d = file("one_d.npy");
    const std::vector<std::size_t> shape_1d = {5};
    vkf::write_npy(one_d, DType::I64, shape_1d, pattern_bytes(40));
    std::ifstream in_1d(one_d, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in_1d)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("'shape': (5,), }"), std::string::npos);
}

TEST_F(NpyTest, ReadsHandWrittenFilesOfEveryVersion) {
    const std::string data = float_bytes({1.5f, -2.0f, 0.25f});
    for (unsigned major : {1u, 2u, 3u}) {
        // Double quotes, no trailing comma, unusual key order and spacing are all valid.
        const fs::path path = write_npy_file("v" + std::to_string(major) + ".npy",
                                             "{\"shape\":(3,),'fortran_order' : False,'descr':'<f4'}\n", data, major);
        const vkf::NpyArray array = vkf::read_npy(path);
        EXPECT_EQ(array.shape, std::vector<std::size_t>{3});
        EXPECT_EQ(vkf::npy_as_float32(array), (std::vector<float>{1.5f, -2.0f, 0.25f}));
    }
}

TEST_F(NpyTest, Float16ConvertsToFloat32) {
    const std::vector<float> values = {1.0f, -0.5f, 65504.0f, 0x1p-24f, 3.140625f};
    const std::vector<std::uint16_t> halves = vkf::floats_to_halves(values);
    std::vector<std::byte> data(halves.size() * 2);
    for (std::size_t i = 0; i < halves.size(); ++i) {
        data[2 * i] = static_cast<std::byte>(halves[i] & 0xffu);
        data[2 * i + 1] = static_cast<std::byte>(halves[i] >> 8);
    }
    const std::vector<std::size_t> shape = {5};
    const fs::path path = file("half.npy");
    vkf::write_npy(path, DType::F16, shape, data);
    EXPECT_EQ(vkf::npy_as_float32(vkf::read_npy(path)), values);
}

TEST_F(NpyTest, Float32Helpers) {
    const std::vector<float> values = {0.1f, -7.0f, 1e30f, -0.0f, 2.5f, 3.0f};
    const std::vector<std::size_t> shape = {2, 3};
    const fs::path path = file("f32.npy");
    vkf::write_npy_f32(path, shape, values);
    const vkf::NpyArray array = vkf::read_npy(path);
    EXPECT_EQ(array.dtype, DType::F32);
    EXPECT_EQ(vkf::npy_as_float32(array), values);

    const std::vector<std::size_t> wrong_shape = {4};
    EXPECT_THROW(vkf::write_npy_f32(path, wrong_shape, values), vkf::Error);

    const std::vector<std::size_t> ints_shape = {2};
    vkf::write_npy(path, DType::I32, ints_shape, pattern_bytes(8));
    try {
        vkf::npy_as_float32(vkf::read_npy(path));
        ADD_FAILURE() << "npy_as_float32 accepted an integer array";
    } catch (const vkf::Error& e) {
        EXPECT_NE(std::string(e.what()).find("<i4"), std::string::npos) << e.what();
    }
}

TEST_F(NpyTest, WriteRejectsDataOfTheWrongSize) {
    const std::vector<std::size_t> shape = {2, 3};
    try {
        vkf::write_npy(file("bad.npy"), DType::F32, shape, pattern_bytes(20));
        ADD_FAILURE() << "write_npy accepted 20 bytes for [2, 3] of <f4";
    } catch (const vkf::Error& e) {
        EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("bad.npy"), std::string::npos) << e.what();
    }
}

// --- malformed files ---------------------------------------------------------------------

const std::string kGoodHeader = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";

TEST_F(NpyTest, MissingFile) {
    expect_read_error(file("does_not_exist.npy"), "cannot open");
}

TEST_F(NpyTest, BadMagic) {
    expect_read_error(write_bytes("magic.npy", "\x93NUMPZ\x01\x00\x10\x00 not numpy at all"), "bad magic");
    expect_read_error(write_bytes("text.npy", "hello"), "bad magic");
}

TEST_F(NpyTest, TruncatedHeader) {
    expect_read_error(write_bytes("empty.npy", ""), "truncated header");
    expect_read_error(write_bytes("short.npy", "\x93NUMPY"), "truncated header");
    expect_read_error(write_bytes("no_length.npy", std::string("\x93NUMPY\x01\x00\x40", 9)), "truncated header");
    expect_read_error(write_bytes("no_length_v2.npy", std::string("\x93NUMPY\x02\x00\x40\x00", 10)),
                      "truncated header");
}

TEST_F(NpyTest, UnsupportedVersion) {
    expect_read_error(write_npy_file("v4.npy", kGoodHeader, float_bytes({1, 2}), 4), "unsupported format version 4.0");
}

TEST_F(NpyTest, HeaderLengthBeyondFile) {
    expect_read_error(write_npy_file("long_header.npy", kGoodHeader, "", 1, 1000),
                      "header length 1000 extends beyond the end of the file");
    expect_read_error(write_npy_file("long_header_v2.npy", kGoodHeader, "", 2, 0x10000000u),
                      "extends beyond the end of the file");
}

TEST_F(NpyTest, UnparsableDictionary) {
    const std::vector<std::string> headers = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, }\n",   // unclosed tuple
        "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}\n",    // missing comma
        "'descr': '<f4', 'fortran_order': False, 'shape': (2,)\n",     // not a dict
        "{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}\n",   // lowercase bool
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}\n",  // negative dimension
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}\n",    // an int, not a tuple
        "{'descr': '<f4', 'fortran_order': False}\n",                  // missing shape
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}\n",
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n",
        "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}\n",     // broken quoting
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x\n",  // trailing text
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}\n",
    };
    for (std::size_t n = 0; n < headers.size(); ++n) {
        const fs::path path = write_npy_file("dict" + std::to_string(n) + ".npy", headers[n], float_bytes({1, 2}));
        SCOPED_TRACE(headers[n]);
        expect_read_error(path, "unparsable header dictionary");
    }
}

TEST_F(NpyTest, UnsupportedDtype) {
    expect_read_error(
        write_npy_file("f8.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n", std::string(8, '\0')),
        "unsupported dtype '<f8'");
    expect_read_error(
        write_npy_file("u1.npy", "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }\n", std::string(4, '\0')),
        "unsupported dtype '|u1'");
    expect_read_error(
        write_npy_file("big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", float_bytes({1, 2})),
        "big-endian dtype '>f4'");
}

TEST_F(NpyTest, FortranOrder) {
    expect_read_error(write_npy_file("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n",
                                     float_bytes({1, 2})),
                      "Fortran-order");
}

TEST_F(NpyTest, DataShorterOrLongerThanShape) {
    expect_read_error(write_npy_file("short_data.npy", kGoodHeader, float_bytes({1})),
                      "data section has 4 bytes but shape [2] of <f4 needs 8 (truncated)");
    expect_read_error(write_npy_file("long_data.npy", kGoodHeader, float_bytes({1, 2, 3})),
                      "data section has 12 bytes but shape [2] of <f4 needs 8 (trailing bytes)");
    expect_read_error(write_npy_file("zero_dim.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (), }\n",
                                     std::string(4, '\0')),
                      "shape [] of <i8 needs 8");
}

}  // namespace
