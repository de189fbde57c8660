// Text for numbers, sizes and shapes (base/format.hpp).

#include "base/format.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

TEST(DescribeShape, Format) {
    const std::vector<std::size_t> shape = {2, 7, 8, 64};
    EXPECT_EQ(vkf::shape_text(shape), "[2, 7, 8, 64]");
    EXPECT_EQ(vkf::shape_text({}), "[]");
    const std::vector<std::size_t> one = {5};
    EXPECT_EQ(vkf::shape_text(one), "[5]");
    EXPECT_EQ(vkf::shape_text({7, 64}, "f16"), "[7, 64] f16");
}

TEST(Format, SizesInBinaryUnits) {
    EXPECT_EQ(vkf::size_text(0), "0 bytes");
    EXPECT_EQ(vkf::size_text(1023), "1023 bytes");
    EXPECT_EQ(vkf::size_text(32768), "32 KiB");
    EXPECT_EQ(vkf::size_text(std::uint64_t{128} << 20), "128 MiB");
    EXPECT_EQ(vkf::size_text(1536), "1.50 KiB");
    EXPECT_EQ(vkf::size_text(std::uint64_t{8192} * 1000 * 1000), "7.63 GiB");
}

TEST(Format, SizesWithTheExactByteCount) {
    EXPECT_EQ(vkf::size_with_bytes(100), "100 bytes");
    EXPECT_EQ(vkf::size_with_bytes(32768), "32 KiB (32768)");
    EXPECT_EQ(vkf::size_with_bytes(1536), "1.50 KiB (1536)");
}

TEST(Format, CountsWithTheirNoun) {
    EXPECT_EQ(vkf::count_text(0, "case"), "0 cases");
    EXPECT_EQ(vkf::count_text(1, "device"), "1 device");
    EXPECT_EQ(vkf::count_text(3, "file"), "3 files");
}

TEST(Format, FixedAndSignificantDigits) {
    EXPECT_EQ(vkf::fixed(3.14159, 2), "3.14");
    EXPECT_EQ(vkf::fixed(1.0 / 3.0, 3), "0.333");
    EXPECT_EQ(vkf::significant(0.0041234), "0.00412");
    EXPECT_EQ(vkf::significant(41.234), "41.2");
    EXPECT_EQ(vkf::significant(12345.6), "12346");
    EXPECT_EQ(vkf::significant(0.0), "0");
}

}  // namespace
