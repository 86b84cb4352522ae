#include "hyperpipe/cli/planning_progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace hyperpipe::cli {
namespace {

planner::PlanProgress at(const std::string& phase, int step, int steps, double fraction,
                         double best, int64_t simulations) {
  return {phase, step, steps, fraction, best, simulations};
}

// What the line says: the phase of the search furthest behind, the share done over both,
// the fastest plan of either, the plans simulated, the time left.
TEST(PlanningProgress, TheLineSaysWhereThePlanningIs) {
  std::ostringstream out;
  PlanningProgress progress(out, /*terminal=*/true, /*searches=*/2, /*show_after_seconds=*/0);
  progress.callback(0)(at("baselines", 1, 3, 0.8, 2.0, 300));
  progress.callback(1)(at("schedules and refinement", 2, 5, 0.4, 1.5, 100));
  // Three seconds in and 60% done: two seconds left.
  const std::string line = progress.line(3.0);
  EXPECT_NE(line.find("Planning: schedules and refinement 2/5, 60% done, 400 plans simulated, "
                      "best so far 1.50 s per iteration, about 2 s left"),
            std::string::npos)
      << line;
  EXPECT_NE(progress.line(0.3).find("under a second left"), std::string::npos);
  progress.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.front(), '\r');  // drawn in place
  EXPECT_NE(text.find("Planned in "), std::string::npos) << text;
  EXPECT_NE(text.find(": 400 plans simulated by 2 searches side by side"), std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

TEST(PlanningProgress, NothingFitsYetAndNoGuessOfTheTimeLeftAtTheStart) {
  std::ostringstream out;
  PlanningProgress progress(out, /*terminal=*/true, 1, 0);
  progress.callback(0)(at("search", 0, 4, 0.01, 0, 0));
  const std::string line = progress.line(2.0);
  EXPECT_NE(line.find("nothing that fits yet"), std::string::npos) << line;
  EXPECT_EQ(line.find("left"), std::string::npos) << line;
}

// A log or a pipe gets no redrawn line: one line at the end.
TEST(PlanningProgress, OneLineAtTheEndInALog) {
  std::ostringstream out;
  PlanningProgress progress(out, /*terminal=*/false, 1, 0);
  progress.callback(0)(at("first pass", 3, 10, 0.3, 0, 12));
  progress.callback(0)(at("done", 0, 0, 1, 1.2, 40));
  EXPECT_TRUE(out.str().empty()) << out.str();
  progress.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_NE(text.find(": 40 plans simulated\n"), std::string::npos) << text;
}

// Planning quicker than the threshold prints nothing anywhere, nor does a failed one.
TEST(PlanningProgress, QuickOrFailedPlanningPrintsNothing) {
  for (const bool terminal : {true, false}) {
    std::ostringstream out;
    PlanningProgress quick(out, terminal, 1, /*show_after_seconds=*/1e9);
    quick.callback(0)(at("first pass", 3, 10, 0.3, 0, 12));
    quick.finish();
    EXPECT_TRUE(out.str().empty()) << out.str();
    PlanningProgress failed(out, terminal, 1, 1e9);
    failed.callback(0)(at("first pass", 3, 10, 0.3, 0, 12));
    failed.abandon();
    EXPECT_TRUE(out.str().empty()) << out.str();
  }
}

}  // namespace
}  // namespace hyperpipe::cli
