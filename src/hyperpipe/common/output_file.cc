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

bool write_all(int fd, const std::string& content) {
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
  // mkstemp creates a new file (O_CREAT | O_EXCL, so never through a planted symbolic
  // link or over another file) with a name no one can guess, beside `path` so the rename
  // stays inside one file system.
  std::string name = path + ".tmp.XXXXXX";
  std::vector<char> temporary(name.begin(), name.end());
  temporary.push_back('\0');
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) {
    throw InputError(
        path, "",
        std::string("cannot write here (does the directory exist?): ") + std::strerror(errno));
  }
  name = temporary.data();
  const bool written = ::fchmod(fd, default_file_mode()) == 0 && write_all(fd, content);
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    (void)std::remove(name.c_str());  // best effort: the error that follows matters
    throw InputError(path, "", "writing failed (is the disk full?)");
  }
  // rename replaces `path` itself, even when it is a symbolic link: never the file it
  // points to.
  std::error_code error;
  std::filesystem::rename(name, path, error);
  if (error) {
    (void)std::remove(name.c_str());  // best effort: the error that follows matters
    throw InputError(path, "", "cannot replace the file: " + error.message());
  }
}

}  // namespace hyperpipe
