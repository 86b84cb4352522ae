// Progress of a long command (profiling every layer kind takes minutes on a big model): on
// a terminal one line redrawn in place with a bar and the time left, elsewhere (a log, a
// pipe) one line per update, so logs stay readable.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace hyperpipe::cli {

// Whether `out` is this process's standard output or error and that is a terminal.
bool is_terminal(const std::ostream& out);

class ProgressLine {
 public:
  ProgressLine(std::ostream& out, bool terminal);
  // `done` of `total` steps, the one just done named `what`; the time left is the mean time
  // per step so far times the steps left.
  void update(int done, int total, const std::string& what);
  // A line of the caller's own: drawn over the last one on a terminal, else printed.
  void show(std::string line);
  // Ends the redrawn line (nothing when not on a terminal).
  void finish();

 private:
  std::ostream& out_;
  bool terminal_;
  size_t last_width_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// "42 s", "3 min 05 s".
std::string format_eta(double seconds);

}  // namespace hyperpipe::cli
