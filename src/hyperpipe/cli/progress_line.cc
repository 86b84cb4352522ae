#include "hyperpipe/cli/progress_line.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace hyperpipe::cli {
namespace {

constexpr int kBarWidth = 24;

}  // namespace

bool is_terminal(const std::ostream& out) {
  if (&out == &std::cout) return isatty(fileno(stdout));
  if (&out == &std::cerr) return isatty(fileno(stderr));
  return false;
}

ProgressLine::ProgressLine(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

void ProgressLine::update(int done, int total, const std::string& what) {
  const int filled = total > 0 ? done * kBarWidth / total : kBarWidth;
  std::string line = fmt::format("  [{}{}] {:>2}/{} {}", std::string(filled, '#'),
                                 std::string(kBarWidth - filled, '.'), done, total, what);
  if (done > 0 && done < total) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    line += fmt::format(", {} left", format_eta(elapsed / done * (total - done)));
  }
  show(std::move(line));
}

void ProgressLine::show(std::string line) {
  if (!terminal_) {
    out_ << line << '\n' << std::flush;
    return;
  }
  // Over the previous line: pad with blanks where it was longer.
  const size_t width = line.size();
  if (width < last_width_) line += std::string(last_width_ - width, ' ');
  last_width_ = width;
  out_ << '\r' << line << std::flush;
}

void ProgressLine::finish() {
  if (terminal_ && last_width_ > 0) out_ << '\n' << std::flush;
  last_width_ = 0;
}

std::string format_eta(double seconds) {
  if (seconds < 60) return fmt::format("{:.0f} s", seconds);
  return fmt::format("{:.0f} min {:02.0f} s", std::floor(seconds / 60), std::fmod(seconds, 60));
}

}  // namespace hyperpipe::cli
