// Writing result files so that a failure never leaves a half-written file behind.
#pragma once

#include <string>

namespace hyperpipe {

// Writes `content` to a temporary file beside `path`, then renames it over `path`.
// Throws InputError naming `path` if the directory cannot be written.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace hyperpipe
