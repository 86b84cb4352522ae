#include "hyperpipe/report/run_records.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "test_files.h"

namespace hyperpipe::report {
namespace {

using hyperpipe::testing::slurp;
using hyperpipe::testing::temp_path;

// The start-up record is written once, when the first step is done, its milestones in the
// order they came; the start-up time is from the process's start to that step.
TEST(RunRecords, TheStartUpRecordIsWrittenOnceAfterTheFirstStep) {
  TrainReportOptions options;
  options.tokens_per_step = 4096;
  options.startup_record_path = temp_path("startup-record.json");
  std::filesystem::remove(*options.startup_record_path);
  RunRecords records(options);
  records.mark("joined");
  records.started(std::nullopt, 0);
  EXPECT_FALSE(std::filesystem::exists(*options.startup_record_path));
  records.step_done({0, 6.0, 1.0, 2.0});
  const auto startup = nlohmann::json::parse(slurp(*options.startup_record_path));
  EXPECT_EQ(startup["format"], kStartupFormat);
  EXPECT_EQ(startup["steps_done"], 0);
  EXPECT_TRUE(startup["checkpoint"].is_null());
  EXPECT_LE(startup["reporter_created"].get<double>(), startup["joined"].get<double>());
  EXPECT_LE(startup["joined"].get<double>(), startup["first_step_done"].get<double>());
  EXPECT_GE(records.startup_seconds(), 0);
  std::filesystem::remove(*options.startup_record_path);
  records.step_done({1, 5.0, 1.0, 2.0});
  EXPECT_FALSE(std::filesystem::exists(*options.startup_record_path));  // not again
  EXPECT_DOUBLE_EQ(records.tokens_per_s(2.0), 2048);
  ASSERT_EQ(records.metrics().size(), 2u);
  EXPECT_EQ(records.metrics()[1]["step"], 2);  // counted from 1, as the step lines
  EXPECT_DOUBLE_EQ(records.metrics()[1]["tokens_per_s"].get<double>(), 2048);
  EXPECT_FALSE(records.metrics()[1].contains("loss_scale"));  // no loss scaling
}

// A validation joins the metrics line of the step it followed, and only that step's.
TEST(RunRecords, AValidationJoinsItsStepsLine) {
  RunRecords records(TrainReportOptions{});
  records.started(std::nullopt, 0);
  records.step_done({0, 6.0, 1.0, 1.0});
  records.evaluated(0, std::log(20.0));
  EXPECT_NEAR(records.metrics()[0]["validation_perplexity"].get<double>(), 20.0, 1e-9);
  records.step_done({1, 5.0, 1.0, 1.0});
  records.evaluated(0, 1.0);  // not the last step's: nowhere to put it
  EXPECT_FALSE(records.metrics()[1].contains("validation_loss"));
  EXPECT_NEAR(records.metrics()[0]["validation_loss"].get<double>(), std::log(20.0), 1e-12);
}

}  // namespace
}  // namespace hyperpipe::report
