#include "hyperpipe/common/input_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"

namespace hyperpipe {

uint64_t require_regular_file(const std::string& path, const std::string& what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    throw InputError(path, "", fmt::format("cannot open {} here: {}", what, std::strerror(error)));
  }
  if (S_ISDIR(info.st_mode)) {
    throw InputError(path, "", fmt::format("expected {} (a file), got a directory", what));
  }
  if (!S_ISREG(info.st_mode)) {
    throw InputError(
        path, "", fmt::format("expected {} (a regular file), got a device, pipe or socket", what));
  }
  return static_cast<uint64_t>(info.st_size);
}

std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  const uint64_t size = require_regular_file(path, what);
  const auto too_large = [&](uint64_t bytes) {
    return InputError(path, "",
                      fmt::format("{} may be at most {}; this file holds {}", what,
                                  format_bytes(static_cast<double>(max_bytes)),
                                  bytes > size ? "more (it grew while read)"
                                               : format_bytes(static_cast<double>(bytes))));
  };
  if (size > max_bytes) throw too_large(size);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open " + what + " for reading");
  // Read at most one byte past the cap, so a file that grows while read still fails.
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  char extra = 0;
  while (text.size() <= max_bytes && in.get(extra)) text.push_back(extra);
  if (text.size() > max_bytes) throw too_large(text.size());
  return text;
}

}  // namespace hyperpipe
