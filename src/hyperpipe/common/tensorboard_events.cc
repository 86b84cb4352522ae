#include "hyperpipe/common/tensorboard_events.h"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "hyperpipe/common/crc32.h"
#include "hyperpipe/common/epoch_time.h"
#include "hyperpipe/common/error.h"

namespace hyperpipe {
namespace {

// Protocol-buffer wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

// The version string TensorBoard expects in a file's first event.
constexpr char kFileVersion[] = "brain.Event:2";

// TFRecord masks its CRCs so that a CRC of data holding CRCs stays well spread.
constexpr uint32_t kMaskDelta = 0xA282EAD8u;

uint32_t masked_crc(const std::string& bytes) {
  const uint32_t crc = crc32c(bytes.data(), bytes.size());
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

template <typename T>
void put_little_endian(std::string& out, T value) {
  static_assert(std::endian::native == std::endian::little, "a little-endian host");
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_key(std::string& out, uint32_t field, uint32_t wire_type) {
  put_varint(out, (field << 3) | wire_type);
}

void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

// An Event with its wall time and step, and `rest` (its other fields, encoded).
std::string event(double wall_time, int64_t step, const std::string& rest) {
  std::string out;
  put_key(out, 1, kFixed64);
  put_little_endian(out, wall_time);
  put_key(out, 2, kVarint);
  put_varint(out, static_cast<uint64_t>(step));
  return out + rest;
}

}  // namespace

std::string scalar_event(const std::string& tag, double value, int64_t step, double wall_time) {
  std::string summary_value;
  put_bytes(summary_value, 1, tag);
  put_key(summary_value, 2, kFixed32);
  put_little_endian(summary_value, static_cast<float>(value));
  std::string summary;
  put_bytes(summary, 1, summary_value);
  std::string rest;
  put_bytes(rest, 5, summary);
  return event(wall_time, step, rest);
}

std::string tf_record(const std::string& data) {
  std::string length;
  put_little_endian(length, static_cast<uint64_t>(data.size()));
  std::string record = length;
  put_little_endian(record, masked_crc(length));
  record += data;
  put_little_endian(record, masked_crc(data));
  return record;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw InputError(dir, "", "a directory for TensorBoard's events: " + error.message());
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const double now = epoch_seconds(std::chrono::system_clock::now());
  path_ = (std::filesystem::path(dir) / fmt::format("events.out.tfevents.{}.{}.{}.hyperpipe",
                                                    static_cast<int64_t>(now), host, getpid()))
              .string();
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) throw InputError(dir, "", "a directory where TensorBoard's event file can be written");
  std::string version;
  put_bytes(version, 3, kFileVersion);
  write_record(event(now, 0, version));
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step,
                                   double wall_time) {
  write_record(scalar_event(tag, value, step, wall_time));
}

void TensorBoardWriter::write_record(const std::string& data) {
  out_ << tf_record(data) << std::flush;
  if (!out_) throw InputError(path_, "", "a file TensorBoard's events can be written to");
}

}  // namespace hyperpipe
