#include "hyperpipe/common/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "hyperpipe/common/error.h"

namespace hyperpipe {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "", fmt::format("a readable file ({})", std::strerror(errno)));
  struct stat status {};
  if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    close(fd);
    throw InputError(path, "", "a regular file");
  }
  size_ = static_cast<size_t>(status.st_size);
  if (size_ > 0) {
    void* address = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      const int error = errno;
      close(fd);
      throw InputError(path, "",
                       fmt::format("a file that can be mapped ({})", std::strerror(error)));
    }
    data_ = static_cast<const std::byte*>(address);
  }
  close(fd);
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

}  // namespace hyperpipe
