// `plan`'s progress while it searches (one search per optimizer sharding, side by side):
// once planning has taken kShowAfterSeconds, on a terminal one line redrawn in place with
// the phase under way, the fastest plan found so far and the time left; elsewhere (a log,
// a pipe) nothing while it runs and one line at the end. Quicker planning prints nothing.
#pragma once

#include <chrono>
#include <mutex>
#include <ostream>
#include <vector>

#include "hyperpipe/cli/progress_line.h"
#include "hyperpipe/planner/plan_progress.h"

namespace hyperpipe::cli {

// Interactive users notice a wait from about a second (issue 40: "when planning takes
// longer than a second").
inline constexpr double kShowAfterSeconds = 1.0;
// At most this often a redraw: the planner reports every step, thousands a second.
inline constexpr double kRedrawEverySeconds = 0.1;

class PlanningProgress {
 public:
  PlanningProgress(std::ostream& out, bool terminal, int searches,
                   double show_after_seconds = kShowAfterSeconds);

  // The callback for search `index` (thread-safe; each search calls from its own thread).
  planner::PlanProgressCallback callback(int index);
  // The line at the end, where planning took long enough to show one.
  void finish();
  // Planning failed: a drawn line is ended (the error follows on a line of its own), no
  // summary.
  void abandon();

  // The line as drawn `elapsed_seconds` after planning began: exposed for tests.
  std::string line(double elapsed_seconds) const;

 private:
  void update(int index, const planner::PlanProgress& progress);
  double elapsed() const;

  bool terminal_;
  double show_after_;
  ProgressLine progress_line_;
  mutable std::mutex mutex_;
  std::vector<planner::PlanProgress> latest_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_drawn_ = -1;
};

}  // namespace hyperpipe::cli
