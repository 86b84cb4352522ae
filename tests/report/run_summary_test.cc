// What a training run says about itself: its plan, precision, recomputation and files.
#include "hyperpipe/report/run_summary.h"

#include <gtest/gtest.h>

#include "hyperpipe/model/catalogue.h"

namespace hyperpipe::report {
namespace {

plan::StagePlan stage(int first, int end, int device, model::Recompute recompute) {
  plan::StagePlan s;
  s.first_layer = first;
  s.end_layer = end;
  s.devices = {device};
  s.recompute = recompute;
  return s;
}

TEST(RunSummary, PrecisionSaysWhatComputesAndWhatIsKeptInFp32) {
  EXPECT_EQ(precision_text("bf16"),
            "bf16 compute with fp32 master weights, gradients and AdamW state (mixed precision)");
  EXPECT_EQ(precision_text("fp16"),
            "fp16 compute with fp32 master weights, gradients and AdamW state (mixed precision, "
            "dynamic loss scaling)");
  EXPECT_EQ(precision_text("fp32"),
            "fp32 throughout (weights, gradients, AdamW state and compute)");
  EXPECT_NE(precision_text("fp64").find("fp64 throughout"), std::string::npos);
}

TEST(RunSummary, RecomputationIsNamedOnceWhenEveryGroupSharesIt) {
  plan::Plan plan;
  plan.stages = {stage(0, 2, 0, model::Recompute::none), stage(2, 4, 1, model::Recompute::none)};
  EXPECT_EQ(recomputation_text(plan), "none");
  for (auto& s : plan.stages) s.recompute = model::Recompute::full;
  EXPECT_EQ(recomputation_text(plan), "full on every device group");
  // A second pipeline's groups count, after the first's.
  plan::Pipeline replica;
  replica.stages = {stage(0, 4, 2, model::Recompute::selective)};
  plan.replicas.push_back(replica);
  EXPECT_EQ(recomputation_text(plan), "per device group in plan order: full, full, selective");
}

TEST(RunSummary, FilesAreTheOnesAskedForWithThePredictedTwinsOfTracedTimelines) {
  TrainReportOptions options;
  options.metrics_path = "out/m.jsonl";
  options.svg_path = "out/step.svg";
  options.checkpoint_dir = "out/ck";
  const auto untraced = run_files(options, /*traced=*/false);
  ASSERT_EQ(untraced.size(), 3u);
  EXPECT_EQ(untraced[1].path, "out/m.jsonl.prediction.json");
  EXPECT_EQ(untraced[2].path, "out/ck");
  const auto traced = run_files(options, /*traced=*/true);
  ASSERT_EQ(traced.size(), 5u);
  EXPECT_EQ(traced[3].what, "measured SVG chart");
  EXPECT_EQ(traced[3].path, "out/step.svg");
  EXPECT_EQ(traced[4].what, "predicted SVG chart");
  EXPECT_EQ(traced[4].path, predicted_path("out/step.svg"));
  const std::string text = files_written_text(traced);
  EXPECT_NE(text.find("\n  predicted SVG chart:              out/step.predicted.svg\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(files_written_text({}), "");
}

TEST(RunSummary, TheHeaderNamesThePlanPrecisionRecomputationAndFiles) {
  plan::Plan plan;
  plan.micro_batches = 8;
  plan.micro_batch_size = 1;
  plan.chunks = 2;
  plan.schedule = schedule::ScheduleKind::interleaved;
  plan.stages = {stage(0, 1, 0, model::Recompute::none), stage(1, 2, 1, model::Recompute::none),
                 stage(2, 3, 0, model::Recompute::none), stage(3, 4, 1, model::Recompute::none)};
  TrainReportOptions options;
  options.metrics_path = "m.jsonl";
  const model::Model model(*model::find_catalogue_model("gpt2"));
  const std::string header = run_header(plan, "runs/plan.json", model, "a100x8", "bf16", options);
  EXPECT_NE(header.find("training gpt2-124m on a100x8 with plan.json: 2 device groups, schedule "
                        "interleaved (2 chunks per device group), 8 micro-batches of 1 sequence "
                        "per iteration\n"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("\nprecision: bf16 compute"), std::string::npos) << header;
  EXPECT_NE(header.find("\nrecomputation: none\n"), std::string::npos) << header;
  EXPECT_NE(header.find("\nwrites: metrics (JSON lines) to m.jsonl; prediction against the "
                        "measured to m.jsonl.prediction.json\n"),
            std::string::npos)
      << header;
}

// A rate that changes gets a line: its peak, the warm-up and the decay it follows; a
// constant one none.
TEST(RunSummary, TheLearningRateLineNamesItsWarmUpAndDecay) {
  training::LrSchedule lr;
  lr.max_lr = 3e-4;
  EXPECT_EQ(learning_rate_text(lr), "");
  lr.warmup_iters = 10;
  EXPECT_EQ(learning_rate_text(lr), "learning rate: 0.0003 after 10 steps of warm-up from 0\n");
  lr.style = training::LrDecayStyle::cosine;
  lr.min_lr = 3e-5;
  lr.decay_iters = 100;
  EXPECT_EQ(learning_rate_text(lr),
            "learning rate: 0.0003 after 10 steps of warm-up from 0, cosine decay to 3e-05 at "
            "step 100\n");
  lr.warmup_iters = 0;
  EXPECT_EQ(learning_rate_text(lr), "learning rate: 0.0003, cosine decay to 3e-05 at step 100\n");
}

}  // namespace
}  // namespace hyperpipe::report
