// What a training run reports at its end: the prediction against the measured steps.
#include "hyperpipe/report/training_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hyperpipe/plan/checked_plan.h"
#include "report/report_options.h"
#include "test_files.h"

namespace hyperpipe::report {
namespace {

using hyperpipe::testing::slurp;

using report::testing::report_options;

// The record of a run whose steps took 9, 1, 4 and 2 s: the first warms up and is left
// out, the median of the others is 2 s.
runtime::TrainRecord four_steps() {
  runtime::TrainRecord record;
  record.reporter = true;
  record.steps = {{0, 5, 1, 9.0}, {1, 5, 1, 1.0}, {2, 5, 1, 4.0}, {3, 5, 1, 2.0}};
  return record;
}

// On GPUs costed from their datasheets the prediction is of the devices that ran.
TEST(TrainReport, ThePredictionMeetsTheMedianStepAfterTheFirst) {
  const auto [plan, model, cluster] = plan::load_checked_plan(
      std::string(HYPERPIPE_EXAMPLES) + "/plans/tiny-gpt-3stage.json", "a100x8");
  const std::string metrics = hyperpipe::testing::temp_path("prediction-metrics.jsonl");
  std::ostringstream out;
  auto options = report_options(metrics);
  options.on_gpus = true;
  report_prediction(four_steps(), plan, model, cluster, nullptr, options, out);
  EXPECT_NE(out.str().find("measured 2000.0 ms (median of 3 steps): error"), std::string::npos)
      << out.str();
  const auto prediction = nlohmann::json::parse(slurp(metrics + ".prediction.json"));
  EXPECT_DOUBLE_EQ(prediction["measured_iteration_s"].get<double>(), 2.0);
  EXPECT_EQ(prediction["source"], "estimates");
  EXPECT_TRUE(prediction["comparable"]);
  const double predicted = prediction["predicted_iteration_s"].get<double>();
  EXPECT_GT(predicted, 0);
  EXPECT_DOUBLE_EQ(prediction["relative_error"].get<double>(), predicted / 2.0 - 1);
  EXPECT_FALSE(prediction.contains("replayed_iteration_s"));  // no timeline in the record
  std::filesystem::remove(metrics + ".prediction.json");
}

// CPU stand-ins costed from their GPU types' datasheets: a prediction of other machines,
// so no error is shown, and the way to one that means something is.
TEST(TrainReport, StandInsWithoutProfilesShowNoError) {
  const auto [plan, model, cluster] =
      plan::load_checked_plan(std::string(HYPERPIPE_EXAMPLES) + "/plans/tiny-gpt-3stage.json");
  const std::string metrics = hyperpipe::testing::temp_path("stand-in-metrics.jsonl");
  std::ostringstream out;
  report_prediction(four_steps(), plan, model, cluster, nullptr, report_options(metrics), out);
  EXPECT_EQ(out.str().find("error +"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("error -"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("measured 2000.0 ms per iteration (median of 3 steps). No error"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("pass --profiles profiles.json"), std::string::npos) << out.str();
  const auto prediction = nlohmann::json::parse(slurp(metrics + ".prediction.json"));
  EXPECT_FALSE(prediction["comparable"]);
  EXPECT_FALSE(prediction.contains("relative_error"));
  std::filesystem::remove(metrics + ".prediction.json");
}

// GPU types run on this host's CPU (a plan for a100x8 trained with --device cpu): the
// prediction is of A100s, so no error either.
TEST(TrainReport, GpuTypesRunOnTheCpuShowNoErrorEither) {
  const auto [plan, model, cluster] = plan::load_checked_plan(
      std::string(HYPERPIPE_EXAMPLES) + "/plans/tiny-gpt-3stage.json", "a100x8");
  const std::string metrics = hyperpipe::testing::temp_path("cpu-metrics.jsonl");
  std::ostringstream out;
  const auto prediction =
      report_prediction(four_steps(), plan, model, cluster, nullptr, report_options(metrics), out);
  EXPECT_NE(out.str().find("ran on this host's CPUs"), std::string::npos) << out.str();
  EXPECT_FALSE(prediction["comparable"]);
  EXPECT_FALSE(prediction.contains("relative_error"));
  std::filesystem::remove(metrics + ".prediction.json");
}

}  // namespace
}  // namespace hyperpipe::report
