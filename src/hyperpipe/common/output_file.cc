#include "hyperpipe/common/output_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hyperpipe/common/error.h"

namespace hyperpipe {

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "cannot write here (does the directory exist?)");
    out << content;
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      throw InputError(path, "", "writing failed (is the disk full?)");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::remove(temporary.c_str());
    throw InputError(path, "", "cannot replace the file: " + error.message());
  }
}

}  // namespace hyperpipe
