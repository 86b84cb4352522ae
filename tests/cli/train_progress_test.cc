// What `hyperpipe train` prints and keeps around the runtime's records, on rank 0.
#include "hyperpipe/cli/train_progress.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <sstream>

#include "cli/cli_run.h"
#include "report/report_options.h"
#include "test_files.h"

namespace hyperpipe::cli {
namespace {

using testing::slurp;

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(slurp(path));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

using report::testing::report_options;

TEST(TrainProgress, PrintsAStepLineAndKeepsTheMetricsAtEachCheckpoint) {
  const std::string metrics = hyperpipe::testing::temp_path("progress-metrics.jsonl");
  std::ostringstream out;
  TrainProgress progress(report_options(metrics), out);
  progress.started(std::nullopt, 0);
  progress.step_done({0, 5.5, 2.0, 0.5});
  progress.step_done({1, 5.0, 1.5, 0.25});
  progress.checkpoint_saved(2, 0.1);
  // Two steps at a mean of 0.375 s leave three: 1.125 s, printed rounded.
  EXPECT_NE(out.str().find("step 1/5  loss 5.5000  2000 tokens/s  0.500 s/step  ETA 2 s"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("step 2/5  loss 5.0000  4000 tokens/s  0.250 s/step  ETA 1 s"),
            std::string::npos)
      << out.str();
  const auto lines = json_lines(metrics);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 1);  // counted from 1, as the step lines print them
  EXPECT_EQ(lines[1]["step"], 2);
  EXPECT_DOUBLE_EQ(lines[1]["grad_norm"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(lines[1]["tokens_per_s"].get<double>(), 4000);
  std::filesystem::remove(metrics);
}

// Start-up before the first step: who joined, then this process's layers as they are
// built; off a terminal the layers' line comes at most every two seconds and at the end.
TEST(TrainProgress, StartUpSaysWhoJoinedAndHowFarTheLayersAre) {
  std::ostringstream out;
  TrainProgress progress(TrainReportOptions{}, out);
  progress.joined(3, 1.3);
  for (int built = 1; built <= 4; ++built) progress.layer_built(built, 4);
  EXPECT_NE(out.str().find("3 processes joined in 1.3 s\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("]  4/4 of this process's layers built\n"), std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find(" 2/4 "), std::string::npos) << out.str();
}

TEST(TrainProgress, AResumedRunKeepsTheStepsBeforeItsCheckpoint) {
  const std::string metrics = hyperpipe::testing::write_temp_file(
      "resumed-metrics.jsonl",
      "{\"step\":1,\"loss\":6}\n{\"step\":2,\"loss\":5}\nnot json\n[1]\n{\"step\":3,\"loss\":4}\n");
  std::ostringstream out;
  TrainProgress progress(report_options(metrics), out);
  progress.started("ckpt/step-2", 2);
  progress.step_done({2, 3.5, 1.0, 0.5});
  progress.write_metrics();
  EXPECT_NE(out.str().find("resuming from ckpt/step-2 (2 steps done)"), std::string::npos);
  const auto lines = json_lines(metrics);
  ASSERT_EQ(lines.size(), 3u);  // steps 1 and 2 kept, the old step 3 replaced
  EXPECT_EQ(lines[1]["loss"], 5);
  EXPECT_DOUBLE_EQ(lines[2]["loss"].get<double>(), 3.5);
  EXPECT_EQ(lines[2]["step"], 3);
  std::filesystem::remove(metrics);
}

TEST(TrainProgress, AStopNamesTheSignalAndTheCheckpoint) {
  const std::string metrics = hyperpipe::testing::temp_path("stopped-metrics.jsonl");
  auto options = report_options(metrics);
  options.checkpoint_dir = "ckpt";
  std::ostringstream out;
  TrainProgress progress(options, out);
  progress.started(std::nullopt, 0);
  progress.step_done({0, 5.5, 2.0, 0.5});
  progress.stopped(SIGTERM, 1);
  EXPECT_NE(out.str().find("stopped by SIGTERM after step 1; checkpoint of step 1 in ckpt"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(json_lines(metrics).size(), 1u);
  std::filesystem::remove(metrics);
}

TEST(TrainReport, EtaAndPredictedPaths) {
  EXPECT_EQ(format_eta(42), "42 s");
  EXPECT_EQ(format_eta(185), "3 min 05 s");
  EXPECT_EQ(report::predicted_path("run/measured.svg"), "run/measured.predicted.svg");
}

}  // namespace
}  // namespace hyperpipe::cli
