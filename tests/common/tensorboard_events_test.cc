// TensorBoard's event files, byte by byte against the protocol-buffer and TFRecord specs;
// tests/oracles/tensorboard_oracle.py reads a run's with TensorBoard's own reader.
#include "hyperpipe/common/tensorboard_events.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "hyperpipe/common/crc32.h"
#include "test_files.h"

namespace hyperpipe {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

TEST(TensorBoardEvents, AScalarEventIsTheProtocolBufferTheSpecSays) {
  // Event{wall_time: 2.0, step: 300, summary{value{tag: "a", simple_value: 1.0f}}}.
  const std::string expected =
      bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0x40}) +  // field 1, fixed64: 2.0
      bytes({0x10, 0xAC, 0x02}) +                 // field 2, varint: 300
      bytes({0x2A, 0x0A}) +                       // field 5 (summary), 10 bytes
      bytes({0x0A, 0x08}) +                       // Summary.value, 8 bytes
      bytes({0x0A, 0x01, 'a'}) +                  // Value.tag
      bytes({0x15, 0x00, 0x00, 0x80, 0x3F});      // Value.simple_value, fixed32: 1.0f
  EXPECT_EQ(scalar_event("a", 1.0, 300, 2.0), expected);
}

uint32_t read_u32(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

uint32_t mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

TEST(TensorBoardEvents, ARecordIsFramedWithItsLengthAndMaskedCrcs) {
  const std::string data = "123456789";
  const std::string record = tf_record(data);
  ASSERT_EQ(record.size(), 8 + 4 + data.size() + 4);
  uint64_t length;
  std::memcpy(&length, record.data(), 8);
  EXPECT_EQ(length, data.size());
  EXPECT_EQ(read_u32(record, 8), mask(crc32c(record.data(), 8)));
  EXPECT_EQ(record.substr(12, data.size()), data);
  EXPECT_EQ(read_u32(record, 12 + data.size()), mask(0xE3069283u));  // CRC-32C's check value
}

TEST(TensorBoardEvents, TheWriterStartsWithTheFileVersionAndAppendsRecords) {
  const std::string dir = hyperpipe::testing::temp_path("tensorboard-writer");
  std::filesystem::remove_all(dir);
  std::string path;
  {
    TensorBoardWriter writer(dir + "/nested");
    path = writer.path();
    EXPECT_EQ(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u);
    writer.add_scalar("train/loss", 2.5, 1, 100.0);
  }
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(file.find("brain.Event:2"), std::string::npos);
  const std::string last = tf_record(scalar_event("train/loss", 2.5, 1, 100.0));
  ASSERT_GE(file.size(), last.size());
  EXPECT_EQ(file.substr(file.size() - last.size()), last);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hyperpipe
