#include "hyperpipe/cli/planning_progress.h"

#include <fmt/format.h>

#include <algorithm>

#include "hyperpipe/common/quantity.h"

namespace hyperpipe::cli {
namespace {

// Below this share done, the time left is a guess of nothing: not shown.
constexpr double kLeastFractionForTimeLeft = 0.05;

}  // namespace

PlanningProgress::PlanningProgress(std::ostream& out, bool terminal, int searches,
                                   double show_after_seconds)
    : terminal_(terminal),
      show_after_(show_after_seconds),
      progress_line_(out, terminal),
      latest_(static_cast<size_t>(searches)) {}

planner::PlanProgressCallback PlanningProgress::callback(int index) {
  return [this, index](const planner::PlanProgress& progress) { update(index, progress); };
}

double PlanningProgress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string PlanningProgress::line(double elapsed_seconds) const {
  // The searches together: the one furthest behind names the phase, their mean the share
  // done, the fastest plan of any the best so far.
  const planner::PlanProgress* behind = &latest_.front();
  double fraction = 0;
  double best = 0;
  int64_t simulations = 0;
  for (const auto& progress : latest_) {
    if (progress.fraction < behind->fraction) behind = &progress;
    fraction += progress.fraction / static_cast<double>(latest_.size());
    if (progress.best_iteration > 0 && (best == 0 || progress.best_iteration < best)) {
      best = progress.best_iteration;
    }
    simulations += progress.simulations;
  }
  const double now = elapsed_seconds;
  if (fraction >= 1) {
    return fmt::format(
        "  Planned in {}: {} plans simulated{}", format_duration(now), simulations,
        latest_.size() > 1 ? fmt::format(" by {} searches side by side", latest_.size()) : "");
  }
  std::string text =
      fmt::format("  Planning: {}", behind->phase.empty() ? "search" : behind->phase);
  if (behind->steps > 0) text += fmt::format(" {}/{}", behind->step, behind->steps);
  text += fmt::format(", {:.0f}% done, {} plans simulated", 100 * fraction, simulations);
  text += best > 0 ? fmt::format(", best so far {} per iteration", format_duration(best))
                   : ", nothing that fits yet";
  if (fraction >= kLeastFractionForTimeLeft) {
    const double left = now / fraction * (1 - fraction);
    text += left < 1 ? ", under a second left" : fmt::format(", about {} left", format_eta(left));
  }
  return text;
}

void PlanningProgress::update(int index, const planner::PlanProgress& progress) {
  const std::lock_guard<std::mutex> lock(mutex_);
  latest_.at(static_cast<size_t>(index)) = progress;
  if (!terminal_) return;  // one line at the end only
  const double now = elapsed();
  if (now < show_after_ || now - last_drawn_ < kRedrawEverySeconds) return;
  last_drawn_ = now;
  progress_line_.show(line(now));
}

void PlanningProgress::finish() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (elapsed() < show_after_) {
    progress_line_.finish();  // nothing was drawn
    return;
  }
  for (auto& progress : latest_) progress.fraction = 1;  // a search that failed is over too
  progress_line_.show(line(elapsed()));
  progress_line_.finish();
}

void PlanningProgress::abandon() {
  const std::lock_guard<std::mutex> lock(mutex_);
  progress_line_.finish();
}

}  // namespace hyperpipe::cli
