#include "hyperpipe/common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "hyperpipe/common/error.h"

namespace hyperpipe {
namespace {

// The permissions a plain create would give: 0666 less the process's umask.
mode_t default_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

bool write_all(int fd, std::string_view content) {
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t got = ::write(fd, content.data() + written, content.size() - written);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    written += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  AtomicFileWriter file(path);
  file.write(content);
  file.commit();
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  // mkstemp creates a new file (O_CREAT | O_EXCL, so never through a planted symbolic
  // link or over another file) with a name no one can guess, beside `path` so the rename
  // stays inside one file system.
  std::string name = path_ + ".tmp.XXXXXX";
  std::vector<char> temporary(name.begin(), name.end());
  temporary.push_back('\0');
  fd_ = ::mkstemp(temporary.data());
  if (fd_ < 0) {
    throw InputError(
        path_, "",
        std::string("cannot write here (does the directory exist?): ") + std::strerror(errno));
  }
  temporary_ = temporary.data();
  if (::fchmod(fd_, default_file_mode()) != 0) {
    ::close(fd_);
    (void)std::remove(temporary_.c_str());
    throw InputError(path_, "", std::string("cannot set its mode: ") + std::strerror(errno));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) (void)std::remove(temporary_.c_str());  // not committed
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (!write_all(fd_, bytes)) throw InputError(path_, "", "writing failed (is the disk full?)");
  written_ += bytes.size();
}

void AtomicFileWriter::commit() {
  const bool closed = ::close(fd_) == 0;
  fd_ = -1;
  if (!closed) throw InputError(path_, "", "writing failed (is the disk full?)");
  // rename replaces `path` itself, even when it is a symbolic link: never the file it
  // points to.
  std::error_code error;
  std::filesystem::rename(temporary_, path_, error);
  if (error) throw InputError(path_, "", "cannot replace the file: " + error.message());
  temporary_.clear();
}

}  // namespace hyperpipe
