// What runs write for scripts and viewers. `launch --format json` as a script reads it:
// stdout is rank 0's one document (hyperpipe.training/1) and nothing else; the step lines
// and every rank's prefixed output go to stderr; the document's steps are the metrics
// file's. `--trace-steps` draws several steps one after another.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

TEST(ScriptOutputs, LaunchPrintsOneDocumentOnStdout) {
  const std::string dir = prepare("script-outputs", kTinyGpt, kTwoStages);
  // --format before the command, as a global option: it reaches every worker.
  ASSERT_EQ(run_command(fmt::format("{} --format json launch --plan {}/plan.json --data {} "
                                    "--steps 3 --timeout 20 --metrics {}/metrics.jsonl --timeline "
                                    "{}/t.json --trace {}/trace.json --trace-steps 2 > "
                                    "{}/out.json 2> {}/err.txt",
                                    kBinary, dir, kCorpus, dir, dir, dir, dir, dir)),
            0)
      << slurp(dir + "/err.txt");
  const std::string out = slurp(dir + "/out.json");
  const auto doc = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << out;
  EXPECT_EQ(doc["format"], "hyperpipe.training/1");
  EXPECT_EQ(doc["steps_done"], 3);
  ASSERT_EQ(doc["steps"].size(), 3u);
  const std::vector<double> losses = metric_losses(dir);
  ASSERT_EQ(losses.size(), 3u);
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(doc["steps"][s]["step"], static_cast<int64_t>(s) + 1);  // as the step lines
    EXPECT_DOUBLE_EQ(doc["steps"][s]["loss"].get<double>(), losses[s]);
  }
  EXPECT_EQ(doc["files"]["timeline"]["measured"], dir + "/t.json");
  EXPECT_EQ(doc["files"]["timeline"]["predicted"], dir + "/t.predicted.json");
  EXPECT_TRUE(std::filesystem::exists(dir + "/t.predicted.json"));
  // CPU stand-ins without profiles: no error percentage, as the table says.
  EXPECT_EQ(doc["prediction"]["comparable"], false);
  EXPECT_FALSE(doc["prediction"].contains("relative_error"));
  EXPECT_EQ(doc["prediction"]["comparison"]["format"], "hyperpipe.comparison/1");
  const std::string err = slurp(dir + "/err.txt");
  EXPECT_NE(err.find("launching 2 processes"), std::string::npos) << err;
  EXPECT_NE(err.find("[rank 0] step 3/3"), std::string::npos) << err;
  EXPECT_EQ(out.find("[rank"), std::string::npos);
}

// --trace-steps 2: the trace holds the run's last two steps one after the other, each
// rank's ops twice, the second step's after the first's; --timeline keeps one step.
TEST(ScriptOutputs, TheTraceHoldsSeveralSteps) {
  const std::string dir = prepare("trace-steps", kTinyGpt, kTwoStages);
  ASSERT_EQ(run_command(fmt::format("{} launch --plan {}/plan.json --data {} --steps 3 "
                                    "--timeout 20 --timeline {}/t.json --trace {}/trace.json "
                                    "--trace-steps 2 > {}/log.txt 2>&1",
                                    kBinary, dir, kCorpus, dir, dir, dir)),
            0)
      << slurp(dir + "/log.txt");
  const auto one_step = nlohmann::json::parse(slurp(dir + "/t.json"));
  const auto trace = nlohmann::json::parse(slurp(dir + "/trace.json"));
  for (int rank = 0; rank < 2; ++rank) {
    const size_t ops = one_step["tracks"][rank]["compute"].size();
    std::vector<std::pair<double, double>> spans;  // (start, end) of rank's compute, in µs
    for (const auto& event : trace["traceEvents"]) {
      if (event["ph"] == "X" && event["tid"] == 2 * rank) {
        spans.emplace_back(event["ts"], event["ts"].get<double>() + event["dur"].get<double>());
      }
    }
    ASSERT_EQ(spans.size(), 2 * ops) << "rank " << rank;
    // The second step starts after the first has ended.
    EXPECT_GE(spans[ops].first, spans[ops - 1].second) << "rank " << rank;
  }
  std::string title;
  for (const auto& event : trace["traceEvents"]) {
    if (event["name"] == "process_name") title = event["args"]["name"];
  }
  EXPECT_NE(title.find("steps 2–3 (measured)"), std::string::npos) << title;
}

// profile --format json: stdout is one document of what this run measured, the database
// written holds the same entries, and the tables went to stderr.
TEST(ScriptOutputs, ProfilePrintsWhatItMeasured) {
  const std::string dir = prepare("profile-json", kTinyGpt, kTwoStages);
  ASSERT_EQ(run_command(fmt::format("{} profile --model {}/model.yaml --as host --micro-batch 1 "
                                    "--out {}/profiles.json --format json > {}/out.json 2> "
                                    "{}/err.txt",
                                    kBinary, dir, dir, dir, dir)),
            0)
      << slurp(dir + "/err.txt");
  const auto doc = nlohmann::json::parse(slurp(dir + "/out.json"));
  EXPECT_EQ(doc["format"], "hyperpipe.profiling/1");
  EXPECT_EQ(doc["model"], "test-gpt");
  EXPECT_EQ(doc["out"], dir + "/profiles.json");
  // The embedding, a block and the head, once each.
  ASSERT_EQ(doc["entries"].size(), 3u);
  const auto written = nlohmann::json::parse(slurp(dir + "/profiles.json"));
  EXPECT_EQ(written["entries"], doc["entries"]);
  EXPECT_EQ(doc["entries_in_all"], 3);
  EXPECT_NE(slurp(dir + "/err.txt").find("profiling test-gpt on"), std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::runtime
