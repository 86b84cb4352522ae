#include "hyperpipe/common/crc32.h"

#include <gtest/gtest.h>

#include <string>

#include "test_files.h"

namespace hyperpipe {
namespace {

TEST(Crc32, KnownCheckValues) {
  // The "check" value of CRC-32/ISO-HDLC (the CRC catalogue of Greg Cook) and zlib's.
  const std::string digits = "123456789";
  EXPECT_EQ(crc32(digits.data(), digits.size()), 0xCBF43926u);
  EXPECT_EQ(crc32("", 0), 0u);
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(crc32(fox.data(), fox.size()), 0x414FA339u);
}

TEST(Crc32c, KnownCheckValues) {
  // CRC-32/ISCSI's check value (Greg Cook's catalogue) and RFC 3720's test patterns (B.4):
  // 32 bytes of zeros, of 0xFF, and ascending 0 … 31.
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c(digits.data(), digits.size()), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0').data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xFF').data(), 32), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  EXPECT_EQ(crc32c(digits.data() + 4, 5, crc32c(digits.data(), 4)), 0xE3069283u);
}

TEST(Crc32, IncrementalEqualsWholeAndFilesMatch) {
  const std::string text(100000, 'x');
  const uint32_t whole = crc32(text.data(), text.size());
  EXPECT_EQ(crc32(text.data() + 5, text.size() - 5, crc32(text.data(), 5)), whole);
  EXPECT_EQ(file_crc32(testing::write_temp_file("crc.bin", text)), whole);
}

}  // namespace
}  // namespace hyperpipe
