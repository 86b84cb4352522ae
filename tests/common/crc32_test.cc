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

TEST(Crc32, IncrementalEqualsWholeAndFilesMatch) {
  const std::string text(100000, 'x');
  const uint32_t whole = crc32(text.data(), text.size());
  EXPECT_EQ(crc32(text.data() + 5, text.size() - 5, crc32(text.data(), 5)), whole);
  EXPECT_EQ(file_crc32(testing::write_temp_file("crc.bin", text)), whole);
}

}  // namespace
}  // namespace hyperpipe
