// The shape a user already runs: `plan --tp/--pp/--dp/--recompute/--dtype` as fixed
// choices, and `simulate` of a run described as Megatron-LM's command line describes it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "test_files.h"

namespace hyperpipe::cli {
namespace {

using testing::Result;
using testing::run;
using testing::slurp;

const std::string kIslands = std::string(HYPERPIPE_EXAMPLES) + "/clusters/h100-a100-islands.yaml";

TEST(FixedShape, PlanKeepsTheShapeAskedAndSearchesTheRest) {
  const std::string out = hyperpipe::testing::temp_path("fixed-shape-plan.json");
  const std::string base = "plan --model llama2-7b --cluster " + kIslands +
                           " --global-batch 256 --tp 2 --pp 4 --recompute selective --format json";
  const Result r = run(base + " --dtype fp32 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out)["plan"];
  EXPECT_FALSE(plan.contains("replicas"));
  EXPECT_EQ(plan["dtype"], "fp32");
  const int chunks = plan["schedule"].is_object() ? plan["schedule"].value("chunks", 1) : 1;
  ASSERT_EQ(plan["stages"].size(), 4u * chunks);  // four device groups
  for (const auto& stage : plan["stages"]) {
    EXPECT_EQ(stage["tp"], 2);
    EXPECT_EQ(stage["recompute"], "selective");
  }
  // The plan file says what it was costed in (fp32, the model's own is bf16): simulated
  // again, the same prediction.
  const Result simulated = run("simulate --plan " + out + " --format json");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  EXPECT_NEAR(nlohmann::json::parse(simulated.out)["iteration_time_s"].get<double>(),
              plan["predicted"]["iteration_time_s"].get<double>(), 1e-9);
  // In the model's bf16 the same search finds a faster plan.
  const Result bf16 = run(base);
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  const auto bf16_plan = nlohmann::json::parse(bf16.out)["plan"];
  EXPECT_FALSE(bf16_plan.contains("dtype"));
  EXPECT_LT(bf16_plan["predicted"]["iteration_time_s"].get<double>(),
            plan["predicted"]["iteration_time_s"].get<double>());

  const Result dp = run("plan --model llama2-7b --cluster " + kIslands +
                        " --global-batch 256 --dp 4 --format json");
  ASSERT_EQ(dp.exit_code, 0) << dp.err;
  const auto dp_doc = nlohmann::json::parse(dp.out);  // named: a loop over a temporary's part
  for (const auto& stage : dp_doc["plan"]["stages"]) {
    EXPECT_EQ(stage["dp"], 4);
  }
}

TEST(FixedShape, PlanRefusesAShapeTheClusterCannotHoldNamingTheFlag) {
  const std::string base = "plan --model llama2-7b --cluster " + kIslands + " --global-batch 256 ";
  const Result tp = run(base + "--tp 3");
  EXPECT_EQ(tp.exit_code, 2);
  EXPECT_NE(tp.err.find("--tp: 3"), std::string::npos) << tp.err;
  EXPECT_NE(tp.err.find("1, 2, 4, 8"), std::string::npos) << tp.err;
  const Result group = run(base + "--tp 8 --dp 4");
  EXPECT_EQ(group.exit_code, 2);
  EXPECT_NE(group.err.find("the largest such class of h100-a100-islands has 16"), std::string::npos)
      << group.err;
  const Result pp = run(base + "--pp 40");
  EXPECT_EQ(pp.exit_code, 2);
  EXPECT_NE(pp.err.find("--pp: 40"), std::string::npos) << pp.err;
}

// A Megatron-LM run: its time and memory per stage as the simulator predicts them, the same
// as for the same plan given as a file, and beside it what the planner would do instead.
TEST(FixedShape, SimulateADescribedRunAndWhatThePlannerWouldDoInstead) {
  const std::string run_flags = "--model llama2-7b --cluster " + kIslands +
                                " --tp 2 --pp 4 --dp 4 --micro-batch 1 --global-batch 512";
  const Result table = run("simulate " + run_flags);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (const char* expected :
       {"Megatron-LM run: tp 2 × pp 4 × dp 4 on GPUs 0-31", "Peak memory",
        "What the planner would do instead", "planner, your tp, pp, dp and micro-batch kept"}) {
    EXPECT_NE(table.out.find(expected), std::string::npos) << expected << "\n" << table.out;
  }
  const Result json = run("simulate " + run_flags + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["runtime"], "megatron");
  EXPECT_EQ(doc["micro_batch_size"], 4);  // 1 per data-parallel rank, 4 of them
  ASSERT_EQ(doc["stages"].size(), 4u);
  const double yours = doc["iteration_time_s"];
  const std::string file = hyperpipe::testing::temp_path("described-run.json");
  { std::ofstream(file) << doc["plan"].dump(); }
  const Result from_file = run("simulate --plan " + file + " --format json");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(from_file.out)["iteration_time_s"].get<double>(), yours);

  const auto& planner = doc["planner"];
  ASSERT_EQ(planner.size(), 2u);
  const auto& kept = planner[0];
  ASSERT_FALSE(kept["plan"].is_null());
  const int chunks =
      kept["plan"]["schedule"].is_object() ? kept["plan"]["schedule"].value("chunks", 1) : 1;
  EXPECT_EQ(kept["plan"]["stages"].size(), 4u * chunks);
  for (const auto& stage : kept["plan"]["stages"]) {
    EXPECT_EQ(stage["tp"], 2);
    EXPECT_EQ(stage["dp"], 4);
  }
  EXPECT_EQ(kept["plan"]["micro_batch_size"], 4);
  EXPECT_NEAR(kept["speedup"].get<double>(), yours / kept["iteration_time_s"].get<double>(), 1e-12);
  // The whole space holds the kept shape: the planner's best is no slower.
  EXPECT_LE(planner[1]["iteration_time_s"].get<double>(), kept["iteration_time_s"].get<double>());
}

TEST(FixedShape, SimulateRefusesAnUnclearOrImpossibleRun) {
  const Result both = run("simulate --plan " + std::string(HYPERPIPE_EXAMPLES) +
                          "/plans/gpt3-2.7b-4stage.json --tp 2");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("a plan file or a description, not both"), std::string::npos) << both.err;
  const Result batch = run("simulate --global-batch 63 --pp 4");
  EXPECT_EQ(batch.exit_code, 2);
  EXPECT_NE(batch.err.find("--global-batch: 63: a multiple of --micro-batch × dp = 1 × 4"),
            std::string::npos)
      << batch.err;
  const Result world = run("simulate --global-batch 64 --tp 3");
  EXPECT_EQ(world.exit_code, 2);
  EXPECT_NE(world.err.find("tp × pp dividing the cluster's 16 GPUs"), std::string::npos)
      << world.err;
}

}  // namespace
}  // namespace hyperpipe::cli
