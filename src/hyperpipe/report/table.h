// Plain-text tables for terminal output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace hyperpipe::report {

class Table {
 public:
  // Columns whose header starts with '>' are right-aligned (numbers); the '>' is dropped.
  explicit Table(std::vector<std::string> headers);

  void add_row(std::vector<std::string> cells);
  void print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_aligned_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace hyperpipe::report
