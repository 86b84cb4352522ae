// Verdicts a user can trust: a plan over a device's memory less the margin is reported
// with its device, the excess and the term that breaks it, and refused by `launch` unless
// --force; the planner never returns one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "example_plans.h"
#include "test_files.h"

namespace hyperpipe::cli {
namespace {

using testing::Result;
using testing::run;

using testing::kExamples;

using hyperpipe::testing::example_plan_with_margin;

nlohmann::json simulated(const std::string& plan) {
  const Result r = run("simulate --plan " + plan + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

double term(const nlohmann::json& memory, const std::string& name) {
  for (const auto& t : memory["terms"]) {
    if (t["name"] == name) return t["bytes"].get<double>();
  }
  ADD_FAILURE() << "no term " << name;
  return 0;
}

TEST(MemoryVerdict, OverCapacityNamesTheDeviceTheExcessAndTheTerm) {
  const auto fits = simulated(example_plan_with_margin(0.0, "margin-0.json"));
  ASSERT_TRUE(fits["fits"].get<bool>());
  const auto& rank0 = fits["ranks"][0];
  double sum = 0;
  for (const auto& t : rank0["memory"]["terms"]) sum += t["bytes"].get<double>();
  EXPECT_NEAR(sum, rank0["peak_memory_bytes"].get<double>(), 1.0);
  // A margin that leaves the first group 90 % of its communicators short: without them it
  // would fit, without any smaller term it would not.
  const double peak = rank0["peak_memory_bytes"].get<double>();
  const double capacity = rank0["memory_capacity_bytes"].get<double>();
  const double communicators = term(rank0["memory"], "communicators");
  ASSERT_GT(communicators, 0);
  ASSERT_LT(term(rank0["memory"], "allocator"), 0.9 * communicators);
  ASSERT_LT(term(rank0["memory"], "context"), 0.9 * communicators);
  const double margin = 1 - (peak - 0.9 * communicators) / capacity;
  const std::string tight = example_plan_with_margin(margin, "margin-tight.json");
  const auto over = simulated(tight);
  EXPECT_FALSE(over["fits"].get<bool>());
  // (A margin this wide may leave others over too: the first group is the one sized.)
  ASSERT_GE(over["over_capacity"].size(), 1u);
  const auto& verdict = over["over_capacity"][0];
  EXPECT_EQ(verdict["rank"], 0);
  EXPECT_EQ(verdict["breaking_term"], "communicators");
  EXPECT_NEAR(verdict["over_bytes"].get<double>(), 0.9 * communicators, 1e-6 * capacity);
  EXPECT_FALSE(over["ranks"][0]["fits"].get<bool>());

  const Result table = run("simulate --plan " + tight);
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("DOES NOT FIT: stage 0: A100-40GB ×4 [0-3] needs"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("communicators ("), std::string::npos) << table.out;

  // launch refuses it before starting anything, naming the same, unless --force.
  const Result launched = run("launch --plan " + tight + " --steps 1");
  EXPECT_EQ(launched.exit_code, 2) << launched.out << launched.err;
  EXPECT_NE(launched.err.find("communicators"), std::string::npos) << launched.err;
  EXPECT_NE(launched.err.find("--force"), std::string::npos) << launched.err;
}

// Whatever the margin, every device of the plan the planner returns stays within its memory
// less that margin, and the plan records the margin it was made with.
TEST(MemoryVerdict, ThePlannerNeverReturnsAPlanOverTheLimit) {
  for (const double percent : {5.0, 30.0}) {
    const Result r = run(fmt::format(
        "plan --model gpt3-2.7b --cluster {}/clusters/a100-v100-t4.yaml --global-batch 64 "
        "--memory-margin {} --format json",
        kExamples, percent));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_DOUBLE_EQ(doc["plan"]["memory_margin"].get<double>(), percent / 100);
    EXPECT_TRUE(doc["report"]["fits"].get<bool>());
    for (const auto& rank : doc["report"]["ranks"]) {
      EXPECT_LE(rank["peak_memory_bytes"].get<double>(),
                (1 - percent / 100) * rank["memory_capacity_bytes"].get<double>())
          << rank["name"];
    }
  }
  EXPECT_EQ(run("plan --global-batch 64 --memory-margin 80").exit_code, 2);
}

}  // namespace
}  // namespace hyperpipe::cli
