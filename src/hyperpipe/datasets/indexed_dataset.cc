#include "hyperpipe/datasets/indexed_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <span>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/output_file.h"

namespace hyperpipe::datasets {
namespace {

// The index's fixed part: magic, version (u64), dtype code (u8), sequence and document
// counts (u64 each), all little-endian.
constexpr size_t kMagicBytes = sizeof kIndexMagic;
constexpr size_t kFixedBytes = kMagicBytes + 8 + 1 + 8 + 8;

struct DtypeInfo {
  TokenDtype dtype;
  const char* name;
  size_t size;
};

constexpr DtypeInfo kDtypes[] = {
    {TokenDtype::kU8, "uint8", 1},    {TokenDtype::kI8, "int8", 1},
    {TokenDtype::kI16, "int16", 2},   {TokenDtype::kI32, "int32", 4},
    {TokenDtype::kI64, "int64", 8},   {TokenDtype::kF64, "float64", 8},
    {TokenDtype::kF32, "float32", 4}, {TokenDtype::kU16, "uint16", 2},
};

const DtypeInfo* find_dtype(uint8_t code) {
  for (const auto& entry : kDtypes) {
    if (static_cast<uint8_t>(entry.dtype) == code) return &entry;
  }
  return nullptr;
}

// Reads little-endian integers from the index, never past its end.
class IndexReader {
 public:
  IndexReader(std::span<const std::byte> bytes, std::string path)
      : bytes_(bytes), path_(std::move(path)) {}

  template <typename T>
  T next(const char* what) {
    if (sizeof(T) > bytes_.size() - at_) {
      throw InputError(path_, what, "more bytes: the index is cut short");
    }
    uint64_t value = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<uint64_t>(std::to_integer<uint8_t>(bytes_[at_ + i])) << (8 * i);
    }
    at_ += sizeof(T);
    T result;
    std::memcpy(&result, &value, sizeof(T));  // the low bytes, on a little-endian host
    return result;
  }
  size_t left() const { return bytes_.size() - at_; }

 private:
  std::span<const std::byte> bytes_;
  std::string path_;
  size_t at_ = 0;
};

int64_t token_at(const std::byte* at, TokenDtype dtype) {
  switch (dtype) {
    case TokenDtype::kU8:
      return std::to_integer<uint8_t>(*at);
    case TokenDtype::kI8:
      return static_cast<int8_t>(std::to_integer<uint8_t>(*at));
    case TokenDtype::kI16: {
      int16_t v;
      std::memcpy(&v, at, 2);
      return v;
    }
    case TokenDtype::kU16: {
      uint16_t v;
      std::memcpy(&v, at, 2);
      return v;
    }
    case TokenDtype::kI32: {
      int32_t v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case TokenDtype::kI64: {
      int64_t v;
      std::memcpy(&v, at, 8);
      return v;
    }
    case TokenDtype::kF32: {
      float v;
      std::memcpy(&v, at, 4);
      return static_cast<int64_t>(v);
    }
    case TokenDtype::kF64: {
      double v;
      std::memcpy(&v, at, 8);
      return static_cast<int64_t>(v);
    }
  }
  return 0;
}

template <typename T>
void append(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

}  // namespace

size_t token_size(TokenDtype dtype) {
  return find_dtype(static_cast<uint8_t>(dtype))->size;
}

const char* to_string(TokenDtype dtype) {
  return find_dtype(static_cast<uint8_t>(dtype))->name;
}

IndexedDataset::IndexedDataset(const std::string& prefix) : bin_(prefix + ".bin") {
  const std::string index_path = prefix + ".idx";
  const MappedFile index(index_path);
  IndexReader in(index.bytes(), index_path);
  if (index.size() < kFixedBytes ||
      std::memcmp(index.bytes().data(), kIndexMagic, kMagicBytes) != 0) {
    throw InputError(index_path, "the first 9 bytes",
                     "MMIDIDX\\0\\0: a Megatron-LM indexed dataset's index (MMapIndexedDataset)");
  }
  for (size_t i = 0; i < kMagicBytes; ++i) in.next<uint8_t>("magic");
  const auto version = in.next<uint64_t>("version");
  if (version != kIndexVersion) {
    throw InputError(index_path, "version", fmt::format("{}; got {}", kIndexVersion, version));
  }
  const auto code = in.next<uint8_t>("dtype");
  const DtypeInfo* dtype = find_dtype(code);
  if (!dtype)
    throw InputError(index_path, "dtype", fmt::format("a code from 1 to 8; got {}", code));
  dtype_ = dtype->dtype;
  const auto sequences = in.next<uint64_t>("sequence count");
  const auto documents = in.next<uint64_t>("document count");
  // Lengths (i32), pointers (i64) and document starts (i64): exactly what is left.
  const uint64_t left = in.left();
  if (sequences > left / 12 || documents > left / 8 || sequences * 12 + documents * 8 != left) {
    throw InputError(index_path, "sequence and document counts",
                     fmt::format("counts whose arrays fill the index's {} bytes after its header; "
                                 "{} sequences and {} document starts need {}",
                                 left, sequences, documents,
                                 sequences > left || documents > left
                                     ? std::string("more")
                                     : std::to_string(sequences * 12 + documents * 8)));
  }
  lengths_.reserve(sequences);
  for (uint64_t i = 0; i < sequences; ++i) {
    const auto length = in.next<int32_t>("sequence lengths");
    if (length < 0) {
      throw InputError(index_path, fmt::format("sequence {}", i),
                       fmt::format("a length of 0 or more; got {}", length));
    }
    lengths_.push_back(length);
    total_tokens_ += length;
  }
  const uint64_t bin_size = bin_.size();
  pointers_.reserve(sequences);
  for (uint64_t i = 0; i < sequences; ++i) {
    const auto pointer = in.next<int64_t>("sequence pointers");
    const uint64_t bytes = static_cast<uint64_t>(lengths_[i]) * dtype->size;
    if (pointer < 0 || static_cast<uint64_t>(pointer) > bin_size ||
        bytes > bin_size - static_cast<uint64_t>(pointer)) {
      throw InputError(
          index_path, fmt::format("sequence {}", i),
          fmt::format("tokens inside {} ({} bytes); they are at bytes [{}, {})", bin_.path(),
                      bin_size, pointer, static_cast<uint64_t>(pointer) + bytes));
    }
    pointers_.push_back(pointer);
  }
  document_starts_.reserve(documents);
  for (uint64_t d = 0; d < documents; ++d) {
    const auto start = in.next<int64_t>("document starts");
    const int64_t before = document_starts_.empty() ? 0 : document_starts_.back();
    if (start < before || start > static_cast<int64_t>(sequences)) {
      throw InputError(index_path, fmt::format("document start {}", d),
                       fmt::format("ascending sequence indices from 0 to {}; got {} after {}",
                                   sequences, start, before));
    }
    document_starts_.push_back(start);
  }
  if (document_starts_.empty() || document_starts_.front() != 0 ||
      document_starts_.back() != static_cast<int64_t>(sequences)) {
    throw InputError(index_path, "document starts",
                     fmt::format("0 first and {} (the sequence count) last", sequences));
  }
}

std::vector<int64_t> IndexedDataset::tokens(int64_t sequence, int64_t offset, int64_t count) const {
  const int64_t length = lengths_.at(static_cast<size_t>(sequence));
  offset = std::clamp<int64_t>(offset, 0, length);
  const int64_t n = count < 0 ? length - offset : std::min(count, length - offset);
  const size_t size = token_size(dtype_);
  const std::byte* at = bin_.bytes().data() + pointers_[static_cast<size_t>(sequence)] +
                        static_cast<size_t>(offset) * size;
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = token_at(at + i * size, dtype_);
  return ids;
}

IdScan IndexedDataset::scan_ids(int64_t vocab,
                                std::chrono::steady_clock::time_point deadline) const {
  // The clock is read once per this many tokens (about a millisecond's worth).
  constexpr int64_t kTokensPerClockRead = int64_t{1} << 20;
  IdScan scan;
  const size_t size = token_size(dtype_);
  int64_t until_clock = kTokensPerClockRead;
  for (int64_t s = 0; s < sequences(); ++s) {
    const std::byte* at = bin_.bytes().data() + pointers_[static_cast<size_t>(s)];
    const int64_t length = lengths_[static_cast<size_t>(s)];
    for (int64_t i = 0; i < length; ++i) {
      const int64_t id = token_at(at + i * size, dtype_);
      if (id < 0 || id >= vocab) {
        scan.tokens_scanned += i + 1;
        scan.found = OutOfVocabulary{s, i, id};
        return scan;
      }
    }
    scan.tokens_scanned += length;
    until_clock -= length;
    if (until_clock <= 0) {
      if (std::chrono::steady_clock::now() >= deadline) return scan;
      until_clock = kTokensPerClockRead;
    }
  }
  return scan;
}

IndexedDatasetWriter::IndexedDatasetWriter(std::string prefix, TokenDtype dtype)
    : prefix_(std::move(prefix)), dtype_(dtype), bin_(prefix_ + ".bin") {
  const size_t size = token_size(dtype);
  const bool is_float = dtype == TokenDtype::kF32 || dtype == TokenDtype::kF64;
  const bool is_signed = dtype == TokenDtype::kI8 || dtype == TokenDtype::kI16 ||
                         dtype == TokenDtype::kI32 || dtype == TokenDtype::kI64;
  const int bits = static_cast<int>(size * 8);
  low_ = is_signed && bits < 64 ? -(int64_t{1} << (bits - 1)) : 0;
  high_ = bits >= 63 || is_float ? std::numeric_limits<int64_t>::max()
                                 : (int64_t{1} << (is_signed ? bits - 1 : bits)) - 1;
}

IndexedDatasetWriter::~IndexedDatasetWriter() = default;

void IndexedDatasetWriter::add_sequence(std::span<const int64_t> ids) {
  if (ids.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw InputError(prefix_ + ".idx", fmt::format("sequence {}", lengths_.size()),
                     "sequences of at most 2^31 - 1 tokens (the index stores int32 lengths)");
  }
  std::string bytes;
  bytes.reserve(ids.size() * token_size(dtype_));
  for (int64_t id : ids) {
    if (id < low_ || id > high_) {
      throw InputError(prefix_ + ".bin", fmt::format("token {}", id),
                       fmt::format("ids that fit {}", to_string(dtype_)));
    }
    switch (dtype_) {
      case TokenDtype::kU8:
        append<uint8_t>(bytes, static_cast<uint8_t>(id));
        break;
      case TokenDtype::kI8:
        append<int8_t>(bytes, static_cast<int8_t>(id));
        break;
      case TokenDtype::kI16:
        append<int16_t>(bytes, static_cast<int16_t>(id));
        break;
      case TokenDtype::kU16:
        append<uint16_t>(bytes, static_cast<uint16_t>(id));
        break;
      case TokenDtype::kI32:
        append<int32_t>(bytes, static_cast<int32_t>(id));
        break;
      case TokenDtype::kI64:
        append<int64_t>(bytes, id);
        break;
      case TokenDtype::kF32:
        append<float>(bytes, static_cast<float>(id));
        break;
      case TokenDtype::kF64:
        append<double>(bytes, static_cast<double>(id));
        break;
    }
  }
  pointers_.push_back(static_cast<int64_t>(bin_.bytes_written()));
  lengths_.push_back(static_cast<int32_t>(ids.size()));
  tokens_ += static_cast<int64_t>(ids.size());
  bin_.write(bytes);
}

void IndexedDatasetWriter::end_document() {
  const auto sequences = static_cast<int64_t>(lengths_.size());
  if (sequences > document_ends_.back()) document_ends_.push_back(sequences);
}

void IndexedDatasetWriter::finish() {
  end_document();
  std::string index(kIndexMagic, kMagicBytes);
  append<uint64_t>(index, kIndexVersion);
  append<uint8_t>(index, static_cast<uint8_t>(dtype_));
  append<uint64_t>(index, lengths_.size());
  append<uint64_t>(index, document_ends_.size());
  for (int32_t length : lengths_) append<int32_t>(index, length);
  for (int64_t pointer : pointers_) append<int64_t>(index, pointer);
  for (int64_t end : document_ends_) append<int64_t>(index, end);
  // The tokens first: an index never names a token file that is not all there.
  bin_.commit();
  write_file_atomically(prefix_ + ".idx", index);
}

void write_indexed_dataset(const std::string& prefix,
                           const std::vector<std::vector<int64_t>>& sequences, TokenDtype dtype,
                           const std::vector<int64_t>& document_starts) {
  int64_t before = -1;
  for (int64_t start : document_starts) {
    if (start <= before || start > static_cast<int64_t>(sequences.size()) ||
        (before < 0 && start != 0)) {
      throw InputError(prefix + ".idx", "document starts",
                       "ascending sequence indices starting at 0");
    }
    before = start;
  }
  IndexedDatasetWriter writer(prefix, dtype);
  size_t next_start = 1;
  for (size_t s = 0; s < sequences.size(); ++s) {
    if (next_start < document_starts.size() &&
        document_starts[next_start] == static_cast<int64_t>(s)) {
      writer.end_document();
      ++next_start;
    }
    writer.add_sequence(sequences[s]);
  }
  writer.finish();
}

}  // namespace hyperpipe::datasets
