#include "hyperpipe/planner/described_run.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "hyperpipe/common/error.h"

namespace hyperpipe::planner {
namespace {

const std::string kIslands = HYPERPIPE_EXAMPLES "/clusters/h100-a100-islands.yaml";

// The cluster's 32 GPUs over tp 2 × pp 4 leave dp 4; the dtype asked for is the model's
// and the plan's; a cluster file is named by absolute path, a catalogue model as given.
TEST(DescribedRun, TheClustersGpusSetTheDataParallelSizeAndFilesAreAbsolute) {
  RunDescription description;
  description.shape.tp = 2;
  description.shape.pp = 4;
  description.shape.global_batch = 64;
  description.model = "llama2-7b";
  description.cluster = kIslands;
  description.dtype = model::DType::fp16;
  const DescribedRun run = plan_described_run(description);
  EXPECT_EQ(run.shape.dp, 4);
  EXPECT_EQ(run.plan.micro_batches, 16);  // 64 / (1 × 4)
  EXPECT_EQ(run.plan.model, "llama2-7b");
  EXPECT_TRUE(std::filesystem::path(run.plan.cluster).is_absolute()) << run.plan.cluster;
  EXPECT_TRUE(std::filesystem::equivalent(run.plan.cluster, kIslands));
  EXPECT_EQ(run.plan.dtype, model::DType::fp16);
  EXPECT_EQ(run.model.config().dtype, model::DType::fp16);
  EXPECT_EQ(run.cluster.devices().size(), 32u);

  description.dtype.reset();  // the model's own, unrecorded
  EXPECT_FALSE(plan_described_run(description).plan.dtype.has_value());
}

// A world size that tp × pp does not divide is refused, naming them.
TEST(DescribedRun, ARankGridThatDoesNotDivideTheClusterIsRefused) {
  RunDescription description;
  description.shape.tp = 3;
  description.shape.global_batch = 64;
  description.model = "llama2-7b";
  description.cluster = kIslands;
  try {
    plan_described_run(description);
    FAIL() << "tp 3 on 32 GPUs was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--tp"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace hyperpipe::planner
