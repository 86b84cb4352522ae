#include "hyperpipe/report/table.h"

#include <algorithm>
#include <utility>

namespace hyperpipe::report {
namespace {

// Columns on a terminal: UTF-8 code points ("×", "→" are one column, several bytes).
size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char ch : text) width += (ch & 0xC0) != 0x80;
  return width;
}

}  // namespace

Table::Table(std::vector<std::string> headers) {
  for (auto& header : headers) {
    const bool right = !header.empty() && header.front() == '>';
    right_aligned_.push_back(right);
    headers_.push_back(right ? header.substr(1) : std::move(header));
  }
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = display_width(headers_[c]);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  const auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string padding(widths[c] - display_width(cells[c]), ' ');
      line += right_aligned_[c] ? padding + cells[c] : cells[c] + padding;
      if (c + 1 < cells.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  print_row(headers_);
  for (const auto& row : rows_) print_row(row);
}

}  // namespace hyperpipe::report
