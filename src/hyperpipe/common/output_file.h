// Writing result files so that a failure never leaves a half-written file behind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hyperpipe {

// Writes `content` to a temporary file beside `path`, then renames it over `path`.
// Throws InputError naming `path` if the directory cannot be written.
void write_file_atomically(const std::string& path, const std::string& content);

// The same for a file too large to hold in memory: written piece by piece into a temporary
// file beside `path`, which commit() renames over `path`. Destroyed before commit(), it
// removes the temporary file and `path` is untouched.
class AtomicFileWriter {
 public:
  // InputError naming `path` if the directory cannot be written.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // InputError naming the path when the disk refuses (full).
  void write(std::string_view bytes);
  void commit();
  uint64_t bytes_written() const { return written_; }

 private:
  std::string path_;
  std::string temporary_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

}  // namespace hyperpipe
