// Hugging Face's safetensors files: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the tensors' bytes (row-major,
// little-endian). A file is memory-mapped, so a process that reads only its own layers'
// tensors (or a tensor-parallel shard of them) touches only those pages. Every number of
// the header is checked before it is used: a file that fails a check is refused with its
// path and the reason, never read out of bounds. Plain bytes: no libtorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hyperpipe/common/mapped_file.h"

namespace hyperpipe::weights {

// The element types safetensors names (its header's spelling in comments).
enum class TensorDtype {
  kBool,    // BOOL
  kU8,      // U8
  kI8,      // I8
  kF8E4M3,  // F8_E4M3
  kF8E5M2,  // F8_E5M2
  kI16,     // I16
  kU16,     // U16
  kF16,     // F16
  kBF16,    // BF16
  kI32,     // I32
  kU32,     // U32
  kF32,     // F32
  kI64,     // I64
  kU64,     // U64
  kF64,     // F64
};

std::optional<TensorDtype> parse_tensor_dtype(const std::string& name);
const char* to_string(TensorDtype dtype);
size_t element_size(TensorDtype dtype);

// The largest header read: the format's reference implementation refuses larger ones too,
// and real models' headers are a few MiB at most.
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct TensorEntry {
  std::string name;
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte range in the data that follows the header
  uint64_t end = 0;

  int64_t numel() const;
};

// What a header says, checked: the tensors in file order, and the string metadata.
struct SafetensorsHeader {
  std::vector<TensorEntry> tensors;  // ascending begin, covering the data without a gap
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // where the data starts in the file (8 + header length)
};

// Parses and checks the first bytes of a file of `file_size` bytes (at least the 8-byte
// length and the header it gives). `source` names the file in errors (InputError).
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> bytes, uint64_t file_size,
                                           const std::string& source);

// An open, memory-mapped safetensors file.
class SafetensorsFile {
 public:
  // Throws InputError naming `path` when it cannot be read or is not a whole, valid file.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorEntry>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const TensorEntry* find(const std::string& name) const;
  // The tensor's bytes, in the mapped file (valid while this object lives).
  std::span<const std::byte> bytes(const TensorEntry& entry) const;

 private:
  MappedFile file_;
  SafetensorsHeader header_;
};

// One tensor to write: its bytes are copied as they are (little-endian, row-major).
struct TensorToWrite {
  std::string name;
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

// Writes `tensors` (in this order) and `metadata` to `path` as a safetensors file, whole
// or not at all (a temporary file renamed into place). The header is padded with spaces
// so the data starts 8-byte aligned, as the reference implementation writes it. Throws
// InputError when a tensor's bytes do not match its dtype and shape, or a name repeats.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace hyperpipe::weights
