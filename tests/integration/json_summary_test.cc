// `launch --format json` as a script reads it: stdout is rank 0's one document
// (hyperpipe.training/1) and nothing else; the step lines and every rank's prefixed output
// go to stderr. The document's steps are the metrics file's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

TEST(JsonSummary, LaunchPrintsOneDocumentOnStdout) {
  const std::string dir = prepare("json-summary", kTinyGpt, kTwoStages);
  // --format before the command, as a global option: it reaches every worker.
  ASSERT_EQ(run_command(fmt::format("{} --format json launch --plan {}/plan.json --data {} "
                                    "--steps 2 --timeout 20 --metrics {}/metrics.jsonl --timeline "
                                    "{}/t.json > {}/out.json 2> {}/err.txt",
                                    kBinary, dir, kCorpus, dir, dir, dir, dir)),
            0)
      << slurp(dir + "/err.txt");
  const std::string out = slurp(dir + "/out.json");
  const auto doc = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << out;
  EXPECT_EQ(doc["format"], "hyperpipe.training/1");
  EXPECT_EQ(doc["steps_done"], 2);
  ASSERT_EQ(doc["steps"].size(), 2u);
  const std::vector<double> losses = metric_losses(dir);
  ASSERT_EQ(losses.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(doc["steps"][s]["step"], static_cast<int64_t>(s));
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
  EXPECT_NE(err.find("[rank 0] step 2/2"), std::string::npos) << err;
  EXPECT_EQ(out.find("[rank"), std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::runtime
