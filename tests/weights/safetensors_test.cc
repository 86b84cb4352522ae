#include "hyperpipe/weights/safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe::weights {
namespace {

namespace fs = std::filesystem;

template <typename T>
std::span<const std::byte> as_bytes_of(const std::vector<T>& values) {
  return std::as_bytes(std::span<const T>(values));
}

template <typename T>
std::vector<T> values_of(std::span<const std::byte> bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

// A file as another tool would write it: the 8-byte length, `header` as given, `data`.
std::string write_raw(const std::string& name, const std::string& header, const std::string& data,
                      std::optional<uint64_t> length = std::nullopt) {
  const std::string path = hyperpipe::testing::temp_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const uint64_t value = length.value_or(header.size());
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((value >> (8 * i)) & 0xff));
  out << header << data;
  return path;
}

std::string floats(std::initializer_list<float> values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), std::data(values), bytes.size());
  return bytes;
}

// A file written by hand, byte by byte as the format lays it out (not by our writer),
// reads back as its header and bytes say; tensors come in data order whatever the
// header's key order.
TEST(Safetensors, AFileLaidOutByHandReadsAsItsHeaderSays) {
  const std::string path =
      write_raw("by-hand.safetensors",
                R"({"b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]},)"
                R"( "__metadata__": {"format": "pt"},)"
                R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                floats({1.5f, -2.0f, 0.25f}));
  const SafetensorsFile file(path);
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "a");
  EXPECT_EQ(file.tensors()[1].name, "b");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  const TensorEntry* a = file.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, TensorDtype::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(values_of<float>(file.bytes(*a)), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(values_of<float>(file.bytes(*file.find("b"))), (std::vector<float>{0.25f}));
  EXPECT_EQ(file.find("c"), nullptr);
}

TEST(Safetensors, WhatIsWrittenReadsBackBitForBit) {
  const std::vector<float> weight{1, -2, 3.5f, 1e-30f, -0.0f, 7};
  const std::vector<uint16_t> bf16{0x3f80, 0x4000, 0xc040};
  const std::vector<int64_t> step{123456789012345};
  const std::string path = hyperpipe::testing::temp_path("round-trip.safetensors");
  write_safetensors(
      path,
      {{"model.layers.0.mlp.up_proj.weight", TensorDtype::kF32, {2, 3}, as_bytes_of(weight)},
       {"norm", TensorDtype::kBF16, {3}, as_bytes_of(bf16)},
       {"empty", TensorDtype::kF16, {0, 4}, {}},
       {"step", TensorDtype::kI64, {}, as_bytes_of(step)}},
      {{"format", "pt"}, {"written_by", "hyperpipe"}});
  const SafetensorsFile file(path);
  ASSERT_EQ(file.tensors().size(), 4u);
  const auto& up = *file.find("model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(up.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(up.numel(), 6);
  EXPECT_EQ(values_of<float>(file.bytes(up)), weight);
  EXPECT_TRUE(std::signbit(values_of<float>(file.bytes(up))[4]));
  EXPECT_EQ(values_of<uint16_t>(file.bytes(*file.find("norm"))), bf16);
  EXPECT_EQ(file.bytes(*file.find("empty")).size(), 0u);
  EXPECT_EQ(file.find("step")->shape.size(), 0u);
  EXPECT_EQ(values_of<int64_t>(file.bytes(*file.find("step"))), step);
  EXPECT_EQ(file.metadata().size(), 2u);
  // The data starts 8-byte aligned, so a mapped file's elements are aligned.
  std::ifstream in(path, std::ios::binary);
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), sizeof length);
  EXPECT_EQ((8 + length) % 8, 0u);
  EXPECT_EQ(fs::file_size(path), 8 + length + 6 * 4 + 3 * 2 + 8);
}

TEST(Safetensors, TheWriterRefusesBytesThatDoNotMatchAndLeavesNoFile) {
  const std::string path = hyperpipe::testing::temp_path("refused.safetensors");
  fs::remove(path);
  const std::vector<float> three{1, 2, 3};
  EXPECT_THROW(write_safetensors(path, {{"w", TensorDtype::kF32, {2, 2}, as_bytes_of(three)}}),
               InputError);
  EXPECT_THROW(write_safetensors(path, {{"w", TensorDtype::kF32, {3}, as_bytes_of(three)},
                                        {"w", TensorDtype::kF32, {3}, as_bytes_of(three)}}),
               InputError);
  EXPECT_FALSE(fs::exists(path));
}

struct BadFile {
  const char* name;
  std::string header;
  std::string data;
  std::optional<uint64_t> length;  // the first 8 bytes, when not the header's own length
  const char* why;                 // in the message
};

class SafetensorsRefuses : public ::testing::TestWithParam<BadFile> {};

// Each is refused with the file's name and what was wrong, before any byte is used.
TEST_P(SafetensorsRefuses, SayingWhy) {
  const auto& bad = GetParam();
  const std::string path =
      write_raw(std::string(bad.name) + ".safetensors", bad.header, bad.data, bad.length);
  try {
    const SafetensorsFile file(path);
    FAIL() << "accepted";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(bad.why), std::string::npos) << message;
  }
}

const std::string kOne = floats({1.0f});
INSTANTIATE_TEST_SUITE_P(
    BadFiles, SafetensorsRefuses,
    ::testing::Values(
        BadFile{"length-past-the-end", "{}", "", 4096, "not a safetensors file, or one cut short"},
        BadFile{"huge-length", "{}", "", uint64_t{1} << 40, "not a safetensors file"},
        BadFile{"not-json", "{\"a\": ", "", std::nullopt, "a JSON object"},
        BadFile{"not-an-object", "[1, 2]", "", std::nullopt, "a JSON object"},
        BadFile{"unknown-dtype", R"({"a": {"dtype": "F12", "shape": [1], "data_offsets": [0, 4]}})",
                kOne, std::nullopt, "one of BOOL, U8"},
        BadFile{"negative-size",
                R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", kOne,
                std::nullopt, "sizes that are whole numbers"},
        BadFile{"cut-short", R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                kOne, std::nullopt, "the file is cut short or its header is wrong"},
        BadFile{"shape-and-range-differ",
                R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", kOne,
                std::nullopt, "8 bytes for F32 of shape [2]; the range holds 4"},
        BadFile{
            "overflowing-shape",
            R"({"a": {"dtype": "F64", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})",
            kOne, std::nullopt, "more than 2^64"},
        BadFile{"gap", R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                floats({1.0f, 2.0f}), std::nullopt, "to start at byte 0"},
        BadFile{"overlap",
                R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                floats({1.0f, 2.0f}), std::nullopt, "to start at byte 8"},
        BadFile{"bytes-after-the-tensors",
                R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                floats({1.0f, 2.0f}), std::nullopt, "4 bytes after the header"},
        BadFile{"metadata-not-strings", R"({"__metadata__": {"step": 3}})", "", std::nullopt,
                "__metadata__.step"}),
    hyperpipe::testing::NameOfCase());

TEST(Safetensors, AFileShorterThanItsLengthFieldIsRefused) {
  const std::string path = hyperpipe::testing::temp_path("seven-bytes.safetensors");
  std::ofstream(path, std::ios::binary) << "1234567";
  EXPECT_THROW(SafetensorsFile{path}, InputError);
  EXPECT_THROW(SafetensorsFile{path + ".missing"}, InputError);
}

}  // namespace
}  // namespace hyperpipe::weights
