#include "hyperpipe/weights/safetensors.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "hyperpipe/common/error.h"

namespace hyperpipe::weights {
namespace {

// The header's length: the file's first 8 bytes, an unsigned little-endian integer.
constexpr size_t kLengthBytes = 8;
// Where the data starts is padded to this (the reference writer's alignment), so every
// element of up to 8 bytes is aligned in a mapped file.
constexpr size_t kDataAlignment = 8;
constexpr const char* kMetadataKey = "__metadata__";

struct DtypeInfo {
  TensorDtype dtype;
  const char* name;
  size_t size;
};

constexpr std::array<DtypeInfo, 15> kDtypes{{
    {TensorDtype::kBool, "BOOL", 1},
    {TensorDtype::kU8, "U8", 1},
    {TensorDtype::kI8, "I8", 1},
    {TensorDtype::kF8E4M3, "F8_E4M3", 1},
    {TensorDtype::kF8E5M2, "F8_E5M2", 1},
    {TensorDtype::kI16, "I16", 2},
    {TensorDtype::kU16, "U16", 2},
    {TensorDtype::kF16, "F16", 2},
    {TensorDtype::kBF16, "BF16", 2},
    {TensorDtype::kI32, "I32", 4},
    {TensorDtype::kU32, "U32", 4},
    {TensorDtype::kF32, "F32", 4},
    {TensorDtype::kI64, "I64", 8},
    {TensorDtype::kU64, "U64", 8},
    {TensorDtype::kF64, "F64", 8},
}};

const DtypeInfo& info(TensorDtype dtype) {
  for (const auto& entry : kDtypes) {
    if (entry.dtype == dtype) return entry;
  }
  return kDtypes[0];
}

std::string dtype_names() {
  std::string names;
  for (const auto& entry : kDtypes) names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

uint64_t read_length(std::span<const std::byte> bytes) {
  uint64_t length = 0;
  for (size_t i = 0; i < kLengthBytes; ++i) {
    length |= static_cast<uint64_t>(std::to_integer<uint8_t>(bytes[i])) << (8 * i);
  }
  return length;
}

// The number of bytes a tensor of `shape` and `dtype` holds; nothing on overflow.
std::optional<uint64_t> byte_size(const std::vector<int64_t>& shape, TensorDtype dtype) {
  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count)) return std::nullopt;
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(element_size(dtype)), &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

TensorEntry parse_entry(const std::string& name, const nlohmann::json& value, uint64_t data_size,
                        const std::string& source) {
  const auto where = [&](const char* field) {
    return fmt::format("header: \"{}\".{}", name, field);
  };
  if (!value.is_object()) {
    throw InputError(source, fmt::format("header: \"{}\"", name),
                     "an object with dtype, shape and data_offsets");
  }
  TensorEntry entry;
  entry.name = name;
  const auto dtype = value.find("dtype");
  const auto parsed = dtype != value.end() && dtype->is_string()
                          ? parse_tensor_dtype(dtype->get<std::string>())
                          : std::nullopt;
  if (!parsed) throw InputError(source, where("dtype"), "one of " + dtype_names());
  entry.dtype = *parsed;
  const auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array()) {
    throw InputError(source, where("shape"), "a list of sizes");
  }
  for (const auto& dim : *shape) {
    if (!dim.is_number_unsigned() ||
        dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw InputError(source, where("shape"), "sizes that are whole numbers, 0 or more");
    }
    entry.shape.push_back(static_cast<int64_t>(dim.get<uint64_t>()));
  }
  const auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    throw InputError(source, where("data_offsets"), "[begin, end]: two byte offsets");
  }
  entry.begin = (*offsets)[0].get<uint64_t>();
  entry.end = (*offsets)[1].get<uint64_t>();
  if (entry.begin > entry.end || entry.end > data_size) {
    throw InputError(source, where("data_offsets"),
                     fmt::format("begin ≤ end ≤ {} (the bytes after the header); got [{}, {}]: "
                                 "the file is cut short or its header is wrong",
                                 data_size, entry.begin, entry.end));
  }
  const auto size = byte_size(entry.shape, entry.dtype);
  if (!size || *size != entry.end - entry.begin) {
    throw InputError(
        source, where("data_offsets"),
        fmt::format("{} bytes for {} of shape [{}]; the range holds {}",
                    size ? std::to_string(*size) : "more than 2^64", to_string(entry.dtype),
                    fmt::join(entry.shape, ", "), entry.end - entry.begin));
  }
  return entry;
}

}  // namespace

std::optional<TensorDtype> parse_tensor_dtype(const std::string& name) {
  for (const auto& entry : kDtypes) {
    if (name == entry.name) return entry.dtype;
  }
  return std::nullopt;
}

const char* to_string(TensorDtype dtype) {
  return info(dtype).name;
}

size_t element_size(TensorDtype dtype) {
  return info(dtype).size;
}

int64_t TensorEntry::numel() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> bytes, uint64_t file_size,
                                           const std::string& source) {
  if (bytes.size() < kLengthBytes || file_size < kLengthBytes) {
    throw InputError(source, "the first 8 bytes",
                     fmt::format("a safetensors file: 8 bytes of header length, then the header; "
                                 "the file has {} bytes",
                                 file_size));
  }
  const uint64_t length = read_length(bytes);
  if (length > kMaxHeaderBytes || length > file_size - kLengthBytes) {
    throw InputError(source, "the header length (first 8 bytes)",
                     fmt::format("at most {} bytes and within the file's {}; it says {}: not a "
                                 "safetensors file, or one cut short",
                                 std::min<uint64_t>(kMaxHeaderBytes, file_size - kLengthBytes),
                                 file_size, length));
  }
  if (bytes.size() < kLengthBytes + length) {
    throw InputError(source, "header", fmt::format("{} bytes of header", length));
  }
  const auto* text = reinterpret_cast<const char*>(bytes.data() + kLengthBytes);
  const auto document = nlohmann::json::parse(text, text + length, nullptr, false);
  if (document.is_discarded() || !document.is_object()) {
    throw InputError(source, "header", "a JSON object (tensor name → dtype, shape, data_offsets)");
  }
  SafetensorsHeader header;
  header.data_offset = kLengthBytes + length;
  const uint64_t data_size = file_size - header.data_offset;
  for (const auto& [key, value] : document.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object())
        throw InputError(source, "header: __metadata__", "an object of strings");
      for (const auto& [name, text_value] : value.items()) {
        if (!text_value.is_string()) {
          throw InputError(source, "header: __metadata__." + name, "a string");
        }
        header.metadata[name] = text_value.get<std::string>();
      }
      continue;
    }
    header.tensors.push_back(parse_entry(key, value, data_size, source));
  }
  // The data holds every tensor once, end to end: no overlap, no gap, nothing after.
  std::stable_sort(header.tensors.begin(), header.tensors.end(),
                   [](const TensorEntry& a, const TensorEntry& b) { return a.begin < b.begin; });
  uint64_t covered = 0;
  for (const auto& entry : header.tensors) {
    if (entry.begin != covered) {
      throw InputError(source, fmt::format("header: \"{}\".data_offsets", entry.name),
                       fmt::format("to start at byte {}, where the tensor before it ends (tensors "
                                   "are stored end to end); it starts at {}",
                                   covered, entry.begin));
    }
    covered = entry.end;
  }
  if (covered != data_size) {
    throw InputError(source, "data",
                     fmt::format("{} bytes after the header, as its tensors need; the file has {}",
                                 covered, data_size));
  }
  return header;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : file_(path), header_(parse_safetensors_header(file_.bytes(), file_.size(), path)) {}

const TensorEntry* SafetensorsFile::find(const std::string& name) const {
  for (const auto& entry : header_.tensors) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorEntry& entry) const {
  return file_.bytes().subspan(header_.data_offset + entry.begin, entry.end - entry.begin);
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& tensor : tensors) {
    if (tensor.name == kMetadataKey || !names.insert(tensor.name).second) {
      throw InputError(path, tensor.name, "tensor names that are unique and not __metadata__");
    }
    const auto size = byte_size(tensor.shape, tensor.dtype);
    if (!size || *size != tensor.data.size()) {
      throw InputError(
          path, tensor.name,
          fmt::format("{} bytes for {} of shape [{}]; got {}", size.value_or(0),
                      to_string(tensor.dtype), fmt::join(tensor.shape, ", "), tensor.data.size()));
    }
    header[tensor.name] = {{"dtype", to_string(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + *size}}};
    offset += *size;
  }
  std::string text = header.dump();
  text.append((kDataAlignment - (kLengthBytes + text.size()) % kDataAlignment) % kDataAlignment,
              ' ');
  const std::string temporary = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    std::array<char, kLengthBytes> length{};
    for (size_t i = 0; i < kLengthBytes; ++i) {
      length[i] = static_cast<char>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);
    }
    out.write(length.data(), length.size());
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& tensor : tensors) {
      out.write(reinterpret_cast<const char*>(tensor.data.data()),
                static_cast<std::streamsize>(tensor.data.size()));
    }
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw InputError(path, "", "a directory where the file can be written");
    }
  }
  std::filesystem::rename(temporary, path);
}

}  // namespace hyperpipe::weights
