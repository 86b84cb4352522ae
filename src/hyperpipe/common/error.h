// Errors that a user can fix: a bad file, field or argument.
#pragma once

#include <stdexcept>
#include <string>

namespace hyperpipe {

// Thrown for bad input. The message names the source (a file or "--flag"), the place inside
// it (line and field path), and what was expected, so the user can fix it without reading
// code. The CLI turns it into exit code 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string source, std::string where, std::string expected);

  const std::string& source() const { return source_; }
  const std::string& where() const { return where_; }
  const std::string& expected() const { return expected_; }

 private:
  std::string source_;
  std::string where_;
  std::string expected_;
};

}  // namespace hyperpipe
