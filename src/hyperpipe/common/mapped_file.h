// A file mapped read-only into memory: its pages are read when first touched, so a reader
// that needs a few slices of a large file (a stage's layers of a model, a rank's share of a
// dataset) reads only those.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace hyperpipe {

class MappedFile {
 public:
  // InputError naming `path` when it is not a readable regular file.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hyperpipe
