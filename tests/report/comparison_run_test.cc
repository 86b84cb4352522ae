// What `hyperpipe compare` is asked for: two timeline files, read, matched and compared.
#include "hyperpipe/report/comparison_run.h"

#include <gtest/gtest.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/report/timeline_comparison.h"
#include "test_files.h"

namespace hyperpipe::report {
namespace {

using hyperpipe::testing::error_message;
using hyperpipe::testing::write_temp_file;

constexpr const char* kPredicted = R"({
  "format": "hyperpipe.timeline/1", "title": "p", "tracks": [
    {"name": "stage 0", "devices": [0], "memory": [], "communication": [],
     "compute": [["F", 0, 0, 0, 0.0, 1.0], ["BW", 0, 0, 0, 1.0, 3.0]]}]})";
constexpr const char* kMeasured = R"({
  "format": "hyperpipe.timeline/1", "title": "m", "tracks": [
    {"name": "rank 0", "devices": [0], "memory": [], "communication": [],
     "compute": [["F", 0, 0, 0, 0.0, 1.5], ["BW", 0, 0, 0, 1.5, 4.0]]}]})";

// The files' comparison is that of the timelines they hold.
TEST(ComparisonRun, ComparesTheTimelinesTheFilesHold) {
  const ComparisonRequest request{write_temp_file("cmp-predicted.json", kPredicted),
                                  write_temp_file("cmp-measured.json", kMeasured),
                                  {},
                                  {}};
  const Comparison comparison = compare_files(request);
  EXPECT_EQ(comparison.predicted.title, "p");
  EXPECT_EQ(comparison.measured.title, "m");
  EXPECT_EQ(comparison.report, compare_timelines(comparison.predicted, comparison.measured));
  EXPECT_DOUBLE_EQ(comparison.report.at("predicted_iteration_s").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(comparison.report.at("measured_iteration_s").get<double>(), 4.0);
}

// A file that is no JSON, and a run on devices the prediction has no group for, are refused
// naming the file.
TEST(ComparisonRun, RefusesAFileThatIsNoTimelineAndARunOfAnotherPlan) {
  const std::string predicted = write_temp_file("cmp-predicted-2.json", kPredicted);
  const std::string garbage = write_temp_file("cmp-garbage.json", "not json");
  EXPECT_NE(error_message<InputError>([&] {
              compare_files({predicted, garbage, {}, {}});
            }).find(garbage),
            std::string::npos);
  std::string elsewhere = kMeasured;
  elsewhere.replace(elsewhere.find("\"devices\": [0]"), 14, "\"devices\": [5]");
  const std::string other = write_temp_file("cmp-other.json", elsewhere);
  EXPECT_NE(error_message<InputError>([&] {
              compare_files({predicted, other, {}, {}});
            }).find("expected a run of the plan"),
            std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::report
