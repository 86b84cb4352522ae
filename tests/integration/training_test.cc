// The runtime against an independent reference: `hyperpipe launch` runs a plan with real
// processes on 127.0.0.1, and a single process trains the same model on the same global
// batch with gradient accumulation; their losses and final weights must agree to float
// rounding, for every schedule, uneven splits and unequal data parallelism.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/crc32.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/runtime/checkpoint.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/link_profiler.h"
#include "hyperpipe/runtime/optimizer.h"
#include "hyperpipe/runtime/stage_module.h"
#include "hyperpipe/sim/plan_simulation.h"
#include "hyperpipe/trace/timeline_json.h"
#include "hyperpipe/training/text_corpus.h"
#include "one_process_reference.h"
#include "run_helpers.h"
#include "test_files.h"

namespace hyperpipe::runtime {
namespace {

namespace fs = std::filesystem;
using hyperpipe::testing::temp_path;
using hyperpipe::testing::write_temp_file;
using namespace hyperpipe::runtime::integration;

const char* kTinyLlama =
    "name: test-llama\nflavour: llama\nhidden: 32\nlayers: 4\nheads: 4\nkv_heads: 2\n"
    "ffn_hidden: 64\nvocab: 256\nseq_len: 16\ntied_embeddings: false\n";

constexpr uint64_t kSeed = 7;
constexpr int kSteps = 3;
constexpr double kLearningRate = 3e-3;
// Pipelines and data parallelism change only the order of float sums. In fp32, Adam turns
// the rounding noise of gradients that are zero in exact arithmetic (the key bias's, for
// one) into steps of the full learning rate, so the runs compare in fp64, where that
// noise stays far below this.
constexpr double kTolerance = 1e-9;

struct TrainedRun {
  std::vector<double> losses;
  std::map<std::string, torch::Tensor> weights;
  std::string dir;  // the run's files (measured.json and measured.predicted.json among them)
};

std::string common_options(const std::string& dir, int steps) {
  return fmt::format(
      " --data {} --steps {} --seed {} --lr {} --checkpoint-dir {}/checkpoints --metrics "
      "{}/metrics.jsonl --timeline {}/measured.json --timeout 30 --dtype fp64 {}",
      kCorpus, steps, kSeed, kLearningRate, dir, dir, dir, device_options());
}

// The plan's processes through `hyperpipe launch`, with `extra` options.
TrainedRun launch(const std::string& name, const std::string& model_yaml,
                  const std::string& plan_body, int steps = kSteps, const std::string& extra = "",
                  bool fresh = true) {
  const std::string dir = prepare(name, model_yaml, plan_body, fresh);
  const int code = run_command(kBinary + " launch --plan " + dir + "/plan.json" +
                               common_options(dir, steps) + extra + " > " + dir + "/log.txt 2>&1");
  EXPECT_EQ(code, 0) << slurp(dir + "/log.txt");
  return {metric_losses(dir), checkpoint_weights(dir), dir};
}

// Every process ran exactly the ops the simulator ran for its device group, in the same
// order, the epilogue included: both engines execute plan::schedule_for's lists.
void expect_ops_as_simulated(const TrainedRun& run) {
  const auto load = [&](const std::string& name) {
    return trace::timeline_from_json(nlohmann::json::parse(slurp(run.dir + "/" + name)), name);
  };
  const trace::Timeline measured = load("measured.json");
  const trace::Timeline predicted = load("measured.predicted.json");
  ASSERT_FALSE(measured.tracks.empty());
  for (const auto& track : measured.tracks) {
    const auto group = std::find_if(predicted.tracks.begin(), predicted.tracks.end(), [&](auto& t) {
      return std::find(t.devices.begin(), t.devices.end(), track.devices.at(0)) != t.devices.end();
    });
    ASSERT_NE(group, predicted.tracks.end()) << track.name;
    ASSERT_FALSE(track.ops.empty()) << track.name;
    EXPECT_EQ(track.ops, group->ops) << track.name << " against " << group->name;
    EXPECT_EQ(track.ops.back(), "OPT") << track.name;
    // The tied embedding's sum, where a group runs it, is on both timelines.
    if (std::find(track.ops.begin(), track.ops.end(), "TE") != track.ops.end()) {
      for (const auto* timeline_track : {&track, &*group}) {
        const auto& intervals = timeline_track->communication;
        EXPECT_TRUE(std::any_of(intervals.begin(), intervals.end(), [](const auto& i) {
          return i.op == "tied embedding";
        })) << timeline_track->name;
      }
    }
  }
}

// The reference the pipelined runs must match (one_process_reference.h).
TrainedRun reference(const std::string& model_yaml, int64_t global_batch, int64_t micro_batch,
                     int steps = kSteps) {
  const auto trained =
      one_process_reference(model_yaml, global_batch, micro_batch, steps, {kSeed, kLearningRate});
  return {trained.losses, trained.weights, ""};
}

void expect_same(const TrainedRun& pipelined, const TrainedRun& single) {
  ASSERT_EQ(pipelined.losses.size(), single.losses.size());
  for (size_t s = 0; s < single.losses.size(); ++s) {
    EXPECT_NEAR(pipelined.losses[s], single.losses[s], kTolerance * single.losses[s]) << s;
  }
  ASSERT_EQ(pipelined.weights.size(), single.weights.size());
  double worst = 0;
  std::string worst_key;
  for (const auto& [key, expected] : single.weights) {
    const auto found = pipelined.weights.find(key);
    ASSERT_NE(found, pipelined.weights.end()) << key;
    const double scale = expected.abs().max().item<double>() + 1e-12;
    const double difference = (found->second - expected).abs().max().item<double>() / scale;
    if (difference > worst) {
      worst = difference;
      worst_key = key;
    }
  }
  EXPECT_LT(worst, kTolerance) << worst_key;
  // And training moved the weights: equal to a reference that never trained would fail.
  EXPECT_GT(single.losses.front() - single.losses.back(), 0.05);
}

// A schedule's rates drive the updates: a pipeline with warm-up and linear decay equals
// the one-process loop that sets those rates (Megatron-LM's, written out here: 0 in the
// first step, the peak at the end of the warm-up, 0 at the decay's end).
TEST(Training, TheLearningRateScheduleDrivesEveryUpdate) {
  constexpr int kScheduledSteps = 6;
  const TrainedRun run =
      launch("lr-schedule", kTinyGpt, kTwoStages, kScheduledSteps,
             " --lr-warmup-iters 2 --lr-decay-style linear --lr-decay-iters 5 --min-lr 0");
  const double peak = kLearningRate;
  ReferenceSettings settings{kSeed, kLearningRate};
  settings.rates = {0, peak / 2, peak, peak * 2 / 3, peak / 3, 0};
  const auto scheduled = one_process_reference(kTinyGpt, 6, 2, kScheduledSteps, settings);
  expect_same(run, {scheduled.losses, scheduled.weights, ""});
  // And a constant rate would not match it: the schedule changed the weights.
  const auto constant = reference(kTinyGpt, 6, 2, kScheduledSteps);
  double moved = 0;
  for (const auto& [key, value] : constant.weights) {
    moved = std::max(moved, (run.weights.at(key) - value).abs().max().item<double>());
  }
  EXPECT_GT(moved, 1e-4);
}

// Validation: a pipeline's validation loss equals one process's on the same held-out
// windows for every kind of plan (the forward half of its schedule: interleaved chunks,
// tensor parallelism, pipelines side by side), and its training is one process's.
TEST(Training, AValidationLossIsOneProcesssForEveryPlan) {
  constexpr int kEvalSteps = 4;
  const std::string eval = " --eval-interval 2 --eval-iters 2";
  struct Plan {
    const char* name;
    const char* body;
    int64_t global_batch;
  };
  const Plan plans[] = {
      {"validation-two-stages", kTwoStages, 6},
      {"validation-three-stages-zb-h1", kThreeStages, 6},
      {"validation-tp-two", R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
          "stages": [{"layers": [0, 3], "devices": [0, 1], "tp": 2},
                     {"layers": [3, 6], "devices": [2, 3], "tp": 2}])",
       6},
      {"validation-interleaved", R"("micro_batch_size": 2, "micro_batches": 4,
          "schedule": {"kind": "interleaved", "chunks": 2},
          "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 3], "devices": [1]},
                     {"layers": [3, 5], "devices": [0]}, {"layers": [5, 6], "devices": [1]}])",
       8},
      {"validation-side-by-side-dp", R"("micro_batch_size": 2, "micro_batches": 2,
          "schedule": "gpipe",
          "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 6], "devices": [1]}],
          "replicas": [{"micro_batch_size": 2, "micro_batches": 2, "schedule": "zb-h1",
                        "stages": [{"layers": [0, 4], "devices": [2, 3]},
                                   {"layers": [4, 6], "devices": [4]}]}])",
       8},
  };
  std::map<int64_t, ReferenceRun> references;
  for (const int64_t batch : {6, 8}) {
    ReferenceSettings settings{kSeed, kLearningRate};
    settings.eval_interval = 2;
    settings.eval_iters = 2;
    references[batch] = one_process_reference(kTinyGpt, batch, 2, kEvalSteps, settings);
    ASSERT_EQ(references[batch].validation_losses.size(), 2u);
    // Later validation after more training: lower.
    EXPECT_LT(references[batch].validation_losses[1], references[batch].validation_losses[0]);
  }
  for (const auto& plan : plans) {
    const ReferenceRun& single = references.at(plan.global_batch);
    const TrainedRun run = launch(plan.name, kTinyGpt, plan.body, kEvalSteps, eval);
    std::vector<double> validation;
    std::istringstream lines(slurp(run.dir + "/metrics.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      const auto entry = nlohmann::json::parse(line);
      if (entry.contains("validation_loss")) validation.push_back(entry["validation_loss"]);
    }
    ASSERT_EQ(validation.size(), 2u) << plan.name;
    for (size_t i = 0; i < validation.size(); ++i) {
      EXPECT_NEAR(validation[i], single.validation_losses[i],
                  kTolerance * single.validation_losses[i])
          << plan.name << " " << i;
    }
    // Evaluating leaves weights, optimizer and data order as they were.
    expect_same(run, {single.losses, single.weights, ""});
  }
}

struct Case {
  const char* name;
  const char* plan;  // the plan's fields after model and cluster
  int64_t global_batch;
  int64_t micro_batch;
};

class MatchesOneProcess : public ::testing::TestWithParam<Case> {};

TEST_P(MatchesOneProcess, LossesAndWeights) {
  const Case& c = GetParam();
  const TrainedRun run = launch(c.name, kTinyGpt, c.plan);
  expect_same(run, reference(kTinyGpt, c.global_batch, c.micro_batch));
  expect_ops_as_simulated(run);
}

INSTANTIATE_TEST_SUITE_P(
    Plans, MatchesOneProcess,
    ::testing::Values(Case{"two-stage-1f1b-uneven",
                           R"("micro_batch_size": 2, "micro_batches": 4, "schedule": "1f1b",
                "stages": [{"layers": [0, 4], "devices": [0]}, {"layers": [4, 6], "devices": [1]}])",
                           8, 2},
                      Case{"three-stage-gpipe",
                           R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "gpipe",
                "stages": [{"layers": [0, 1], "devices": [0]}, {"layers": [1, 4], "devices": [1]},
                           {"layers": [4, 6], "devices": [2]}])",
                           6, 2},
                      Case{"four-stage-zb-h1",
                           R"("micro_batch_size": 1, "micro_batches": 6, "schedule": "zb-h1",
                "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 3], "devices": [1]},
                           {"layers": [3, 5], "devices": [2]}, {"layers": [5, 6], "devices": [3]}])",
                           6, 1},
                      Case{"interleaved-two-groups-two-chunks",
                           R"("micro_batch_size": 2, "micro_batches": 4,
                "schedule": {"kind": "interleaved", "chunks": 2},
                "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 3], "devices": [1]},
                           {"layers": [3, 5], "devices": [0]}, {"layers": [5, 6], "devices": [1]}])",
                           8, 2},
                      Case{"hetero-1f1b-deeper-warmup",
                           R"("micro_batch_size": 2, "micro_batches": 4,
                "schedule": {"kind": "hetero-1f1b", "warmup": [4, 2, 1]},
                "stages": [{"layers": [0, 3], "devices": [0]}, {"layers": [3, 5], "devices": [1]},
                           {"layers": [5, 6], "devices": [2]}])",
                           8, 2},
                      Case{"unequal-dp-two-then-one",
                           R"("micro_batch_size": 3, "micro_batches": 3, "schedule": "1f1b",
                "stages": [{"layers": [0, 3], "devices": [0, 1]}, {"layers": [3, 6], "devices": [2]}])",
                           9, 3},
                      Case{"pipelines-side-by-side-uneven-shares",
                           R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
                "stages": [{"layers": [0, 3], "devices": [0]}, {"layers": [3, 6], "devices": [1]}],
                "replicas": [{"micro_batch_size": 2, "micro_batches": 1,
                              "stages": [{"layers": [0, 6], "devices": [2]}]}])",
                           8, 2},
                      Case{"pipelines-side-by-side-other-cuts-and-dp",
                           R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "gpipe",
                "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 6], "devices": [1]}],
                "replicas": [{"micro_batch_size": 2, "micro_batches": 2, "schedule": "zb-h1",
                              "stages": [{"layers": [0, 4], "devices": [2, 3]},
                                         {"layers": [4, 6], "devices": [4]}]}])",
                           8, 2},
                      Case{"dp-two-then-three-zb-h1",
                           R"("micro_batch_size": 6, "micro_batches": 2, "schedule": "zb-h1",
                "stages": [{"layers": [0, 3], "devices": [0, 1]},
                           {"layers": [3, 6], "devices": [2, 3, 4]}])",
                           12, 6},
                      // Tensor parallelism: Megatron shards (tied head and embedding split
                      // by the same vocabulary slices), alone and beside data parallelism
                      // with the weights' gradients deferred.
                      Case{"tp-two-every-stage-1f1b",
                           R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
                "stages": [{"layers": [0, 3], "devices": [0, 1], "tp": 2},
                           {"layers": [3, 6], "devices": [2, 3], "tp": 2}])",
                           6, 2},
                      // The tied head split in two, the embedding whole: their copies are
                      // summed as whole matrices, each end keeping its slices.
                      Case{"tied-head-split-embedding-whole",
                           R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
                "stages": [{"layers": [0, 3], "devices": [0]},
                           {"layers": [3, 6], "devices": [1, 2], "tp": 2}])",
                           6, 2},
                      Case{"tp-two-interleaved",
                           R"("micro_batch_size": 2, "micro_batches": 4,
                "schedule": {"kind": "interleaved", "chunks": 2},
                "stages": [{"layers": [0, 2], "devices": [0, 1], "tp": 2},
                           {"layers": [2, 3], "devices": [2, 3], "tp": 2},
                           {"layers": [3, 5], "devices": [0, 1], "tp": 2},
                           {"layers": [5, 6], "devices": [2, 3], "tp": 2}])",
                           8, 2},
                      Case{"tp-two-beside-a-whole-replica",
                           R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                "stages": [{"layers": [0, 3], "devices": [0, 1], "tp": 2},
                           {"layers": [3, 6], "devices": [2, 3], "tp": 2}],
                "replicas": [{"micro_batch_size": 2, "micro_batches": 1,
                              "stages": [{"layers": [0, 6], "devices": [4, 5], "tp": 2}]}])",
                           6, 2},
                      // Pipelines that split the same layers over different tp: the
                      // gradients are summed as whole tensors, each shard keeping its slice.
                      Case{"tp-two-beside-an-unsplit-replica",
                           R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                "stages": [{"layers": [0, 3], "devices": [0, 1], "tp": 2},
                           {"layers": [3, 6], "devices": [2, 3], "tp": 2}],
                "replicas": [{"micro_batch_size": 2, "micro_batches": 1,
                              "stages": [{"layers": [0, 6], "devices": [4]}]}])",
                           6, 2},
                      Case{"replicas-split-different-layers",
                           R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                "stages": [{"layers": [0, 3], "devices": [0, 1], "tp": 2},
                           {"layers": [3, 6], "devices": [2]}],
                "replicas": [{"micro_batch_size": 2, "micro_batches": 2, "schedule": "gpipe",
                              "stages": [{"layers": [0, 2], "devices": [3]},
                                         {"layers": [2, 6], "devices": [4, 5], "tp": 2}]}])",
                           8, 2},
                      // Each chunk's all-reduce started right after its last weight
                      // gradient, summed while the backward goes on: the same weights.
                      Case{"overlapped-all-reduce-interleaved-dp-two",
                           R"("overlap_allreduce": true, "micro_batch_size": 2, "micro_batches": 4,
                "schedule": {"kind": "interleaved", "chunks": 2},
                "stages": [{"layers": [0, 2], "devices": [0, 1]}, {"layers": [2, 3], "devices": [2, 3]},
                           {"layers": [3, 5], "devices": [0, 1]}, {"layers": [5, 6], "devices": [2, 3]}])",
                           8, 2},
                      // One device group holding every chunk: neighbouring chunks hand
                      // activations and gradients over in memory.
                      Case{"overlapped-all-reduce-one-group-two-chunks",
                           R"("overlap_allreduce": true, "micro_batch_size": 2, "micro_batches": 4,
                "schedule": {"kind": "interleaved", "chunks": 2},
                "stages": [{"layers": [0, 3], "devices": [0, 1]}, {"layers": [3, 6], "devices": [0, 1]}])",
                           8, 2},
                      Case{"overlapped-all-reduce-zb-h1-dp-two-tp-two",
                           R"("overlap_allreduce": true, "micro_batch_size": 4, "micro_batches": 2,
                "schedule": "zb-h1",
                "stages": [{"layers": [0, 4], "devices": [0, 1, 2, 3], "dp": 2, "tp": 2},
                           {"layers": [4, 6], "devices": [4, 5], "tp": 2}])",
                           8, 4},
                      // Recomputation reruns the same floats: the same run as keeping
                      // everything, with B and W apart, under tp, over chunks.
                      Case{"recompute-selective-and-full-zb-h1",
                           R"("micro_batch_size": 1, "micro_batches": 6, "schedule": "zb-h1",
                "stages": [{"layers": [0, 2], "devices": [0], "recompute": "full"},
                           {"layers": [2, 4], "devices": [1], "recompute": "selective"},
                           {"layers": [4, 6], "devices": [2]}])",
                           6, 1},
                      Case{"recompute-full-tp-two-interleaved",
                           R"("recompute": "full", "micro_batch_size": 2, "micro_batches": 4,
                "schedule": {"kind": "interleaved", "chunks": 2},
                "stages": [{"layers": [0, 3], "devices": [0, 1], "tp": 2},
                           {"layers": [3, 4], "devices": [2, 3], "tp": 2},
                           {"layers": [4, 5], "devices": [0, 1], "tp": 2},
                           {"layers": [5, 6], "devices": [2, 3], "tp": 2}])",
                           8, 2},
                      Case{"recompute-selective-dp-two-tp-two-zb-h1",
                           R"("recompute": "selective", "micro_batch_size": 4, "micro_batches": 2,
                "schedule": "zb-h1",
                "stages": [{"layers": [0, 4], "devices": [0, 1, 2, 3], "dp": 2, "tp": 2},
                           {"layers": [4, 6], "devices": [4, 5], "tp": 2, "recompute": "full"}])",
                           8, 4},
                      // Sequence parallelism: the shards' parts of the sequence between the
                      // tensor-parallel products, the stages' activations whole.
                      Case{"sequence-parallel-tp-two-1f1b",
                           R"("sequence_parallel": true, "micro_batch_size": 2, "micro_batches": 3,
                "schedule": "1f1b",
                "stages": [{"layers": [0, 3], "devices": [0, 1], "tp": 2},
                           {"layers": [3, 6], "devices": [2, 3], "tp": 2}])",
                           6, 2},
                      Case{"sequence-parallel-dp-two-tp-two-zb-h1-recomputed",
                           R"("sequence_parallel": true, "recompute": "selective",
                "micro_batch_size": 4, "micro_batches": 2, "schedule": "zb-h1",
                "stages": [{"layers": [0, 4], "devices": [0, 1, 2, 3], "dp": 2, "tp": 2},
                           {"layers": [4, 6], "devices": [4, 5], "tp": 2, "recompute": "full"}])",
                           8, 4},
                      Case{"sequence-parallel-interleaved-beside-a-whole-stage",
                           R"("sequence_parallel": true, "micro_batch_size": 2, "micro_batches": 4,
                "schedule": {"kind": "interleaved", "chunks": 2},
                "stages": [{"layers": [0, 2], "devices": [0, 1], "tp": 2},
                           {"layers": [2, 3], "devices": [2]},
                           {"layers": [3, 5], "devices": [0, 1], "tp": 2},
                           {"layers": [5, 6], "devices": [2]}])",
                           8, 2},
                      Case{"tp-two-with-dp-two-zb-h1",
                           R"("micro_batch_size": 4, "micro_batches": 2, "schedule": "zb-h1",
                "stages": [{"layers": [0, 4], "devices": [0, 1, 2, 3], "dp": 2, "tp": 2},
                           {"layers": [4, 6], "devices": [4, 5], "tp": 2}])",
                           8, 4},
                      // ZeRO-1: each data-parallel rank steps its part of the optimizer
                      // state, then the ranks gather the weights. Parts of unequal length
                      // (dp 3), the tied embedding summed between stages of different dp,
                      // chunks whose all-reduce overlaps the backward, tensor shards.
                      Case{"zero-dp-two-then-three-zb-h1",
                           R"("shard_optimizer": true, "micro_batch_size": 6, "micro_batches": 2,
                "schedule": "zb-h1",
                "stages": [{"layers": [0, 3], "devices": [0, 1]},
                           {"layers": [3, 6], "devices": [2, 3, 4]}])",
                           12, 6},
                      Case{"zero-overlapped-interleaved-dp-two",
                           R"("shard_optimizer": true, "overlap_allreduce": true,
                "micro_batch_size": 2, "micro_batches": 4,
                "schedule": {"kind": "interleaved", "chunks": 2},
                "stages": [{"layers": [0, 2], "devices": [0, 1]}, {"layers": [2, 3], "devices": [2, 3]},
                           {"layers": [3, 5], "devices": [0, 1]}, {"layers": [5, 6], "devices": [2, 3]}])",
                           8, 2},
                      Case{"zero-tp-two-with-dp-two-beside-a-replica",
                           R"("shard_optimizer": true, "micro_batch_size": 4, "micro_batches": 2,
                "schedule": "1f1b",
                "stages": [{"layers": [0, 4], "devices": [0, 1, 2, 3], "dp": 2, "tp": 2},
                           {"layers": [4, 6], "devices": [4, 5], "tp": 2}],
                "replicas": [{"micro_batch_size": 2, "micro_batches": 1,
                              "stages": [{"layers": [0, 6], "devices": [6]}]}])",
                           10, 2}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.name;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(Training, LlamaFlavourMatchesOneProcess) {
  expect_same(launch("llama-two-stage", kTinyLlama,
                     R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
                        "stages": [{"layers": [0, 2], "devices": [0]},
                                   {"layers": [2, 6], "devices": [1]}])"),
              reference(kTinyLlama, 6, 2));
}

// LLaMA's blocks recomputed (grouped-query attention, rotary, RMSNorm in the rerun), one
// stage split in two.
TEST(Training, LlamaRecomputedMatchesOneProcess) {
  expect_same(launch("llama-recomputed", kTinyLlama,
                     R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
                        "stages": [{"layers": [0, 3], "devices": [0], "recompute": "selective"},
                                   {"layers": [3, 6], "devices": [1, 2], "tp": 2,
                                    "recompute": "full"}])"),
              reference(kTinyLlama, 6, 2));
}

// Dropout's masks belong to the samples of the global batch: a pipeline that reshards
// micro-batches over dp 2 then 3, or splits heads over tp 2 and recomputes, draws the
// masks one process draws.
TEST(Training, DropoutMatchesOneProcess) {
  std::string with_dropout = kTinyGpt;
  with_dropout.replace(with_dropout.find("dropout: false"), 14, "dropout: true");
  expect_same(launch("dropout-dp-two-then-three", with_dropout,
                     R"("micro_batch_size": 6, "micro_batches": 2, "schedule": "zb-h1",
                        "stages": [{"layers": [0, 3], "devices": [0, 1]},
                                   {"layers": [3, 6], "devices": [2, 3, 4]}])"),
              reference(with_dropout, 12, 6));
  expect_same(launch("dropout-tp-two-recomputed", with_dropout,
                     R"("recompute": "selective", "micro_batch_size": 4, "micro_batches": 2,
                        "schedule": "1f1b",
                        "stages": [{"layers": [0, 4], "devices": [0, 1, 2, 3], "dp": 2, "tp": 2,
                                    "recompute": "full"},
                                   {"layers": [4, 6], "devices": [4, 5], "tp": 2}])"),
              reference(with_dropout, 8, 4));
}

// LLaMA under sequence parallelism: RMSNorm on the shards' parts, SwiGLU's two products
// of one gathered input, rotary on the whole sequence; and GPT-2's dropout masks cut
// along the sequence as one process draws them whole.
TEST(Training, SequenceParallelLlamaAndDropoutMatchOneProcess) {
  expect_same(launch("sequence-parallel-llama", kTinyLlama,
                     R"("sequence_parallel": true, "micro_batch_size": 2, "micro_batches": 3,
                        "schedule": "1f1b",
                        "stages": [{"layers": [0, 2], "devices": [0, 1], "tp": 2},
                                   {"layers": [2, 6], "devices": [2, 3], "tp": 2,
                                    "recompute": "selective"}])"),
              reference(kTinyLlama, 6, 2));
  std::string with_dropout = kTinyGpt;
  with_dropout.replace(with_dropout.find("dropout: false"), 14, "dropout: true");
  expect_same(launch("sequence-parallel-dropout", with_dropout,
                     R"("sequence_parallel": true, "micro_batch_size": 4, "micro_batches": 2,
                        "schedule": "zb-h1",
                        "stages": [{"layers": [0, 4], "devices": [0, 1, 2, 3], "dp": 2, "tp": 2,
                                    "recompute": "full"},
                                   {"layers": [4, 6], "devices": [4, 5], "tp": 2}])"),
              reference(with_dropout, 8, 4));
}

// A LLaMA (untied) whose second stage alone is split in two: activations fan out from
// the one unsplit rank to both shards, and one shard's input gradient returns.
TEST(Training, TensorParallelStageBesideAWholeOne) {
  expect_same(launch("llama-tp-after-whole", kTinyLlama,
                     R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
                        "stages": [{"layers": [0, 2], "devices": [0]},
                                   {"layers": [2, 6], "devices": [1, 2], "tp": 2}])"),
              reference(kTinyLlama, 6, 2));
}

// A run across hosts, a launcher per host (--devices-here): two launchers on this machine
// share the three-stage plan's processes, meet at one port under one secret, and train
// exactly as one launcher of every process does.
TEST(Training, LaunchersOfOneRunOnSeveralHostsTrainAsOne) {
  const TrainedRun whole = launch("hosts-whole", kTinyGpt, kThreeStages, 4);
  const std::string dir = prepare("hosts-shared", kTinyGpt, kThreeStages);
  const std::string launcher = fmt::format("{} launch --plan {}/plan.json", kBinary, dir);
  const int port = launch::free_port();
  const std::string secret = "HYPERPIPE_JOB_TOKEN=shared-by-every-host";
  const std::string elsewhere =
      fmt::format("{} exec {} --devices-here 2 --port {} {} > {}/elsewhere.txt 2>&1", secret,
                  launcher, port, common_options(dir, 4), dir);
  const char* argv[] = {"/bin/sh", "-c", elsewhere.c_str(), nullptr};
  pid_t other = -1;
  ASSERT_EQ(posix_spawn(&other, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  const int code =
      run_command(fmt::format("{} {} --devices-here 1,0 --port {} {} > {}/here.txt 2>&1", secret,
                              launcher, port, common_options(dir, 4), dir));
  const int other_code = wait_for(other, 120);
  if (other_code < 0) kill(other, SIGKILL);
  ASSERT_EQ(code, 0) << slurp(dir + "/here.txt");
  ASSERT_EQ(other_code, 0) << slurp(dir + "/elsewhere.txt");
  EXPECT_NE(slurp(dir + "/here.txt").find("(ranks 0-1 of 3, the rest elsewhere)"),
            std::string::npos)
      << slurp(dir + "/here.txt");
  EXPECT_NE(slurp(dir + "/elsewhere.txt").find("(ranks 2 of 3, the rest elsewhere)"),
            std::string::npos)
      << slurp(dir + "/elsewhere.txt");
  const auto losses = metric_losses(dir);
  ASSERT_EQ(losses, whole.losses);  // bit for bit
  const auto weights = checkpoint_weights(dir);
  ASSERT_EQ(weights.size(), whole.weights.size());
  for (const auto& [key, value] : whole.weights) {
    EXPECT_TRUE(torch::equal(weights.at(key), value)) << key;
  }
  // A share of a run needs the meeting point, the secret, and --adapt only with --elastic.
  const auto refused = [&](const std::string& options, const std::string& why) {
    const std::string log = dir + "/refused.txt";
    EXPECT_EQ(run_command(fmt::format("{} --devices-here 2 {} --data {} > {} 2>&1", launcher,
                                      options, kCorpus, log)),
              2)
        << options;
    EXPECT_NE(slurp(log).find(why), std::string::npos) << slurp(log);
  };
  refused("", "a --port, the same for every host's launcher");
  refused(fmt::format("--port {}", port), "HYPERPIPE_JOB_TOKEN exported, the same on every host");
  refused("--port 1 --adapt --checkpoint-dir " + dir + "/adapt",
          "--elastic beside --adapt: a run across hosts switches plans through the elastic "
          "leader");
  refused(fmt::format("--port {} --devices-here 7", port), "devices of the plan (0-2)");
}

TEST(Training, ResumedRunEqualsTheUninterruptedOne) {
  const TrainedRun whole = launch("resume-whole", kTinyGpt, kTwoStages, 4);
  launch("resume-parts", kTinyGpt, kTwoStages, 2);
  const TrainedRun resumed = launch("resume-parts", kTinyGpt, kTwoStages, 4, " --resume", false);
  ASSERT_EQ(resumed.losses.size(), 4u);  // the metrics keep the steps before the restart
  for (size_t s = 0; s < 4; ++s) EXPECT_EQ(resumed.losses[s], whole.losses[s]) << s;
  ASSERT_EQ(resumed.weights.size(), whole.weights.size());
  for (const auto& [key, value] : whole.weights) {
    EXPECT_TRUE(torch::equal(resumed.weights.at(key), value)) << key;  // bit for bit
  }
}

// Every tensor of the checkpoint of `steps` steps in dir/checkpoints (weights and AdamW
// state), by name.
std::map<std::string, torch::Tensor> checkpoint_tensors(const std::string& dir, int64_t steps) {
  const std::string step_dir = fmt::format("{}/checkpoints/step-{:08d}", dir, steps);
  const auto manifest = nlohmann::json::parse(slurp(step_dir + "/" + kCheckpointManifest));
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& file : manifest["files"]) {
    torch::serialize::InputArchive archive;
    archive.load_from(step_dir + "/" + file["name"].get<std::string>());
    for (const auto& key : archive.keys()) archive.read(key, tensors[key]);
  }
  return tensors;
}

// Checkpoints are written while the next steps run: each must hold its own step's state.
// A six-step run saving every two steps on emulated slow storage (each write waits half a
// second, so steps 3 and 4 change the live tensors before step 2's are written): its
// checkpoint of step 2 holds what a two-step run ends with, weights and AdamW state bit
// for bit; and every checkpoint is complete at the end.
TEST(Training, ACheckpointWrittenWhileLaterStepsRunHoldsItsOwnStep) {
  const TrainedRun two = launch("async-save-two", kTinyGpt, kTwoStages, 2);
  const TrainedRun six = launch("async-save-six", kTinyGpt, kTwoStages, 6,
                                " --checkpoint-every 2 --checkpoint-write-delay 0.5");
  const auto expected = checkpoint_tensors(two.dir, 2);
  const auto saved = checkpoint_tensors(six.dir, 2);
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(saved.size(), expected.size());
  for (const auto& [key, value] : expected) {
    ASSERT_TRUE(saved.count(key)) << key;
    EXPECT_TRUE(torch::equal(saved.at(key), value)) << key;
  }
  for (int64_t steps : {2, 4, 6}) {
    EXPECT_TRUE(std::filesystem::exists(
        fmt::format("{}/checkpoints/step-{:08d}/{}", six.dir, steps, kCheckpointManifest)))
        << steps;
  }
  // And the step-6 checkpoint is not step 2's: training went on.
  EXPECT_FALSE(torch::equal(checkpoint_tensors(six.dir, 6).begin()->second, saved.begin()->second));
}

// Two steps with plan `first`, then two more resumed from its checkpoint with plan
// `second` (in the same directory): the same as four steps in one process.
void expect_resumed_run_matches(const std::string& name, const std::string& first,
                                const std::string& second) {
  launch(name, kTinyGpt, first, 2);
  const std::string dir = prepare(name, kTinyGpt, second, false);
  ASSERT_EQ(run_command(kBinary + " launch --plan " + dir + "/plan.json" + common_options(dir, 4) +
                        " --resume > " + dir + "/log.txt 2>&1"),
            0)
      << slurp(dir + "/log.txt");
  EXPECT_NE(slurp(dir + "/log.txt").find("resuming from"), std::string::npos);
  expect_same({metric_losses(dir), checkpoint_weights(dir), dir}, reference(kTinyGpt, 6, 2, 4));
}

// Two stages, then three cut elsewhere.
TEST(Training, ACheckpointLoadsIntoAnotherSplit) {
  expect_resumed_run_matches("repartition", kTwoStages, kThreeStages);
}

// Checkpoints hold whole tensors: every stage split in two, then three unsplit stages.
TEST(Training, ACheckpointLoadsIntoAnotherTensorParallelism) {
  expect_resumed_run_matches("retensor",
                             R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
            "stages": [{"layers": [0, 3], "devices": [0, 1], "tp": 2},
                       {"layers": [3, 6], "devices": [2, 3], "tp": 2}])",
                             kThreeStages);
}

// ZeRO-1's checkpoints hold whole tensors too: a sharded run's (dp 2 and 3) loads into
// three unsharded stages, and an unsharded run's into the sharded plan.
constexpr const char* kShardedDpTwoThenThree =
    R"("shard_optimizer": true, "micro_batch_size": 6, "micro_batches": 1, "schedule": "1f1b",
       "stages": [{"layers": [0, 3], "devices": [0, 1]},
                  {"layers": [3, 6], "devices": [2, 3, 4]}])";

TEST(Training, AShardedOptimizersCheckpointLoadsIntoAnotherSplit) {
  expect_resumed_run_matches("zero-repartition", kShardedDpTwoThenThree, kThreeStages);
}

TEST(Training, AWholeCheckpointLoadsIntoAShardedOptimizer) {
  expect_resumed_run_matches("zero-from-whole", kTwoStages, kShardedDpTwoThenThree);
}

// A fresh directory with plan.json: the shipped tiny-gpt in two stages on a100x8.
std::string prepare_shipped_two_stages(const std::string& name, int micro_batch_size,
                                       int micro_batches) {
  const std::string dir = temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/plan.json") << fmt::format(
      R"({{"format": "hyperpipe.plan/1", "model": "{}/models/tiny-gpt.yaml",
    "cluster": "a100x8", "micro_batch_size": {}, "micro_batches": {},
    "stages": [{{"layers": [0, 4], "devices": [0]}}, {{"layers": [4, 8], "devices": [1]}}]}})",
      HYPERPIPE_EXAMPLES, micro_batch_size, micro_batches);
  return dir;
}

TEST(Training, LossGoesDownOnTheShippedCorpus) {
  const std::string dir = prepare_shipped_two_stages("shipped", 4, 4);
  ASSERT_EQ(
      run_command(kBinary + " launch --plan " + dir + "/plan.json --data " + kCorpus +
                  " --steps 25 --metrics " + dir + "/metrics.jsonl > " + dir + "/log.txt 2>&1"),
      0)
      << slurp(dir + "/log.txt");
  const auto losses = metric_losses(dir);
  ASSERT_EQ(losses.size(), 25u);
  // Bytes start near uniform (ln 256 = 5.55 nats); English text has far fewer.
  EXPECT_NEAR(losses.front(), std::log(256.0), 0.2);
  EXPECT_LT(losses.back(), losses.front() - 1.0);
}

// The step a run compares with the prediction is its median one (the first left out),
// so one slow or fast step does not decide the per-device comparison.
TEST(Training, ComparesTheMedianStepWithThePrediction) {
  const std::string dir = prepare_shipped_two_stages("median-step", 2, 2);
  constexpr int kSteps = 8;
  ASSERT_EQ(
      run_command(kBinary + " launch --plan " + dir + "/plan.json --data " + kCorpus + " --steps " +
                  std::to_string(kSteps) + " --metrics " + dir + "/metrics.jsonl --timeline " +
                  dir + "/timeline.json > " + dir + "/log.txt 2>&1"),
      0)
      << slurp(dir + "/log.txt");
  std::vector<std::pair<double, int>> steps;  // seconds, step counted from 1
  std::ifstream in(dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto entry = nlohmann::json::parse(line);
    if (entry["step"].get<int>() > 1) {
      steps.emplace_back(entry["seconds"].get<double>(), entry["step"].get<int>());
    }
  }
  ASSERT_EQ(steps.size(), static_cast<size_t>(kSteps - 1));
  std::sort(steps.begin(), steps.end());
  const int median = steps[steps.size() / 2].second;
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find(fmt::format("predicted against measured in step {},", median)),
            std::string::npos)
      << log;
  std::ifstream timeline(dir + "/timeline.json");
  const auto measured = nlohmann::json::parse(timeline);
  EXPECT_EQ(measured["title"].get<std::string>(),
            fmt::format("tiny-gpt on a100x8: step {} (measured)", median));
  // The replay is the simulator run again on that step's compute as measured.
  const auto plan = plan::load_plan(dir + "/plan.json");
  const auto model = model::load_model(plan.model);  // absolute, as written above
  const cost::CostModel costs(model, cluster::load_cluster(plan.cluster));
  const auto computes =
      sim::measured_compute(plan, trace::timeline_from_json(measured, "timeline.json"));
  sim::SimOptions replay;
  replay.measured = &computes;
  const double replayed = sim::simulate_plan(costs, plan, replay).output.iteration_time;
  std::ifstream prediction_file(dir + "/metrics.jsonl.prediction.json");
  const auto prediction = nlohmann::json::parse(prediction_file);
  EXPECT_NEAR(prediction["replayed_iteration_s"].get<double>(), replayed, 1e-9 * replayed);
  EXPECT_EQ(prediction["replayed_step"].get<int>(), median);  // counted from 1, as the title
  EXPECT_NE(replayed, prediction["predicted_iteration_s"].get<double>());
  EXPECT_NE(log.find(fmt::format("replayed with step {}'s measured compute", median)),
            std::string::npos)
      << log;
}

TEST(Training, EmulatedDeviceTypesRunAtTheirSpeeds) {
  // The built-in cpu-emulated cluster's proportions (1 : 0.4 : 0.2), at half its speeds so
  // the A100 stand-in is stretched too: stretching counts CPU time, so a stand-in's ops
  // keep their length while it waits for a core on a busy host (ctest -j runs others
  // beside), which an unstretched one's would not. The T4 stand-in's two blocks then take
  // about five times what the same two blocks and the embedding take on the A100's.
  const std::string dir = temp_path("emulated");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/model.yaml") << kTinyGpt;
  std::ofstream(dir + "/cluster.yaml")
      << "name: cpu-emulated-half\ngpu_types:\n  - {name: A100-40GB, speed: 0.5}\n"
         "  - {name: V100-16GB, speed: 0.2}\n  - {name: T4, speed: 0.1}\nnodes:\n"
         "  - {name: a100, gpu: A100-40GB, count: 1}\n  - {name: v100, gpu: V100-16GB, count: 1}\n"
         "  - {name: t4, gpu: T4, count: 1}\n"
         "links:\n  intra_island: {bandwidth: 10 GB/s, latency: 20 us}\n";
  std::ofstream(dir + "/plan.json") << R"({"format": "hyperpipe.plan/1", "model": "model.yaml",
    "cluster": ")" + dir + R"(/cluster.yaml", "micro_batch_size": 4, "micro_batches": 6,
    "stages": [{"layers": [0, 3], "devices": [0]}, {"layers": [3, 5], "devices": [2]},
               {"layers": [5, 6], "devices": [1]}]})";
  ASSERT_EQ(run_command(kBinary + " launch --plan " + dir + "/plan.json --data " + kCorpus +
                        " --steps 4 --timeline " + dir + "/timeline.json --metrics " + dir +
                        "/metrics.jsonl > " + dir + "/log.txt 2>&1"),
            0)
      << slurp(dir + "/log.txt");
  std::ifstream in(dir + "/timeline.json");
  const auto timeline = trace::timeline_from_json(nlohmann::json::parse(in), "timeline.json");
  const auto median_forward = [&](int rank) {
    std::vector<double> durations;
    for (const auto& i : timeline.tracks[rank].compute) {
      if (i.op == "F") durations.push_back(i.end - i.start);
    }
    std::sort(durations.begin(), durations.end());
    return durations.at(durations.size() / 2);
  };
  // Wide bounds: the processes share two cores with whatever else runs, which moves each
  // one's CPU time too (without the stretch the ratio is about 1). Four steps, so the step
  // drawn (their median) is not one that another test's start-up slowed throughout.
  const double ratio = median_forward(1) / median_forward(0);
  EXPECT_GT(ratio, 2.0);
  EXPECT_LT(ratio, 12.0);
  EXPECT_TRUE(fs::exists(dir + "/timeline.predicted.json"));  // the simulator's, beside it
  // Without profiles the simulator costs the GPU types' datasheets: the run says that a
  // prediction of other machines is no check of this one, and how to get one that is; the
  // replay with the run's own compute still checks the schedule and communication model.
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find("No error against the prediction"), std::string::npos) << log;
  EXPECT_NE(log.find("pass --profiles profiles.json"), std::string::npos) << log;
  EXPECT_NE(log.find("replayed with step"), std::string::npos) << log;
  // Memory does not depend on the devices' speed: compared group by group all the same.
  EXPECT_NE(log.find("device group by device group (memory: times of other devices)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Memory per device"), std::string::npos) << log;
  EXPECT_EQ(log.find("Compute predicted"), std::string::npos) << log;
  const auto prediction = nlohmann::json::parse(slurp(dir + "/metrics.jsonl.prediction.json"));
  EXPECT_GT(prediction["predicted_iteration_s"].get<double>(), 0);
  EXPECT_GT(prediction["measured_iteration_s"].get<double>(), 0);
  EXPECT_EQ(prediction["source"], "estimates");
  EXPECT_FALSE(prediction["comparable"]);
  EXPECT_FALSE(prediction.contains("relative_error"));
}

TEST(Profile, MeasuresTheEmulatedTypesAsTheyRunAndMerges) {
  const std::string dir = temp_path("profile");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/model.yaml") << kTinyGpt;
  const std::string base =
      kBinary + " profile --model " + dir + "/model.yaml --out " + dir + "/profiles.json";
  ASSERT_EQ(run_command(base + " --cluster cpu-emulated --micro-batch 1 > " + dir + "/log.txt"), 0)
      << slurp(dir + "/log.txt");
  // The link probe reports each message size as it goes (one line each off a terminal).
  const std::string probe_log = slurp(dir + "/log.txt");
  EXPECT_NE(probe_log.find(fmt::format("1/{} message 4.00 KiB measured", kLinkProbeBytes.size())),
            std::string::npos)
      << probe_log;
  ASSERT_EQ(run_command(base + " --as host --micro-batch 2 > " + dir + "/log.txt"), 0)
      << slurp(dir + "/log.txt");
  const auto db = cost::ProfileDb::load(dir + "/profiles.json");
  // Three kinds at size 1 for each of the three stand-ins, then three at size 2 for "host".
  EXPECT_EQ(db.size(), 3u * 3u + 3u);
  EXPECT_FALSE(db.host().empty());
  const cost::ProfileKey a100{
      "test-gpt", model::LayerKind::decoder_block, "A100-40GB", model::DType::fp32, 1, 16};
  cost::ProfileKey v100 = a100;
  v100.device = "V100-16GB";
  cost::ProfileKey t4 = a100;
  t4.device = "T4";
  cost::ProfileKey host = a100;
  host.device = "host";
  // T4 stands in at speed 0.2 of the host, V100 at 0.4, each measured as it runs: the T4
  // about twice as long (wide bounds: timings on a shared machine). Both are stretched
  // stand-ins, so a busy host cannot squeeze the ratio as it can one against the
  // unstretched A100 (speed 1), whose wall time grows while it waits for a core.
  const double ratio = db.find(t4, 1)->times.forward / db.find(v100, 1)->times.forward;
  EXPECT_GT(ratio, 1.5);
  EXPECT_LT(ratio, 3.0);
  EXPECT_LT(db.find(a100, 1)->times.forward, db.find(v100, 1)->times.forward);
  EXPECT_EQ(db.find(host, 2)->match, cost::ProfileMatch::exact);
  EXPECT_EQ(db.find(a100, 1)->match, cost::ProfileMatch::exact);
  // The links between two stand-ins, through Gloo, filed for the emulated cluster and
  // printed; "--as host" measured no links and kept them.
  const auto* links = db.links_for("cpu-emulated");
  ASSERT_NE(links, nullptr);
  EXPECT_EQ(links->backend, "gloo");
  EXPECT_GT(links->point_to_point.bandwidth, 0);
  // A cluster of real GPUs has no stand-ins to derive.
  EXPECT_EQ(run_command(base + " --cluster a100x8 > " + dir + "/log.txt 2>&1"), 2);
  EXPECT_NE(slurp(dir + "/log.txt").find("a type with a `speed`"), std::string::npos);
}

class KilledWorker : public ::testing::TestWithParam<int> {};

TEST_P(KilledWorker, EndsTheRunWithItsRankNamedAndCheckpointsIntact) {
  const int victim = GetParam();  // 0 also hosts the rendezvous store
  const std::string dir = prepare(fmt::format("fault{}", victim), kTinyGpt, kThreeStages);
  const std::string options = fmt::format(
      "--data {} --steps 100000 --timeout 5 --checkpoint-dir {}/checkpoints --checkpoint-every 2",
      kCorpus, dir);
  const int port = 29000 + (::getpid() * 2 + victim) % 1000;
  std::vector<pid_t> workers;
  for (int rank = 0; rank < 3; ++rank) {
    workers.push_back(start_worker(dir + "/plan.json", rank, 3, port, options,
                                   fmt::format("{}/rank{}.log", dir, rank)));
  }
  // Kill the victim once a checkpoint is complete.
  wait_for_checkpoint(dir + "/checkpoints", 60);
  ASSERT_TRUE(latest_checkpoint(dir + "/checkpoints").has_value());
  kill(workers[victim], SIGKILL);
  for (int rank = 0; rank < 3; ++rank) {
    if (rank == victim) continue;
    const int code = wait_for(workers[rank], 30);
    if (code < 0) kill(workers[rank], SIGKILL);
    EXPECT_NE(code, 0) << rank;
    EXPECT_GT(code, 0) << "rank " << rank << " did not stop within 30 s";
    const std::string log = slurp(fmt::format("{}/rank{}.log", dir, rank));
    EXPECT_NE(log.find(fmt::format("rank {}", victim)), std::string::npos) << log;
  }
  waitpid(workers[victim], nullptr, 0);
  // The last complete checkpoint is intact (its CRC-32s check) and holds every layer.
  const auto checkpoint = latest_checkpoint(dir + "/checkpoints");
  ASSERT_TRUE(checkpoint.has_value());
  EXPECT_EQ(checkpoint_weights(dir).size(), reference(kTinyGpt, 6, 2, 0).weights.size());
}

INSTANTIATE_TEST_SUITE_P(Ranks, KilledWorker, ::testing::Values(1, 0));

struct BadTrainCase {
  const char* name;
  const char* plan;         // plan body, or nullptr for kTwoStages
  const char* options;      // beyond --plan
  const char* environment;  // prefix
  const char* fragment;
};

class BadTrainingInput : public ::testing::TestWithParam<BadTrainCase> {};

TEST_P(BadTrainingInput, ExitsTwoBeforeTraining) {
  const auto& c = GetParam();
  const std::string dir = prepare(c.name, kTinyGpt, c.plan ? c.plan : kTwoStages);
  const std::string options = fmt::format(fmt::runtime(c.options), kCorpus, dir);
  const int code = run_command(std::string(c.environment) + " " + kBinary + " train --plan " + dir +
                               "/plan.json " + options + " > " + dir + "/log.txt 2>&1");
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find(c.fragment), std::string::npos) << log;
  EXPECT_EQ(log.find("step 1/"), std::string::npos) << log;  // nothing trained
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadTrainingInput,
    ::testing::Values(
        BadTrainCase{"plan-misfit",
                     R"("micro_batch_size": 2, "micro_batches": 3,
                        "stages": [{"layers": [0, 5], "devices": [0]}])",
                     "--data {0}", "", "the stages cover layers [0, 5), but model test-gpt has 6"},
        BadTrainCase{"missing-data", nullptr, "--data {1}/none.txt", "RANK=0 WORLD_SIZE=2",
                     "none.txt"},
        BadTrainCase{"world-size", nullptr, "--data {0}", "RANK=0 WORLD_SIZE=3",
                     "2 processes, one per device of the plan; the launcher (torchrun) started 3"},
        BadTrainCase{"resume-nowhere", nullptr, "--data {0} --resume", "RANK=0 WORLD_SIZE=2",
                     "a --checkpoint-dir to resume from"}),
    [](const ::testing::TestParamInfo<BadTrainCase>& info) {
      std::string name = info.param.name;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(Training, CorruptOrTruncatedCheckpointIsRefusedBeforeTraining) {
  launch("corrupt", kTinyGpt, kTwoStages, 1);
  const std::string dir = temp_path("corrupt");
  const auto checkpoint = latest_checkpoint(dir + "/checkpoints");
  ASSERT_TRUE(checkpoint.has_value());
  const std::string file =
      checkpoint->path + "/" + checkpoint->manifest["files"][1]["name"].get<std::string>();
  for (const bool truncate : {false, true}) {
    std::string bytes = slurp(file);
    const std::string original = bytes;
    if (truncate) {
      bytes.resize(bytes.size() / 2);
    } else {
      bytes[bytes.size() / 2] ^= 0x40;
    }
    std::ofstream(file, std::ios::binary) << bytes;
    const int code = run_command("RANK=0 WORLD_SIZE=2 " + kBinary + " train --plan " + dir +
                                 "/plan.json --data " + kCorpus + " --checkpoint-dir " + dir +
                                 "/checkpoints --resume --steps 3 > " + dir + "/log.txt 2>&1");
    const std::string log = slurp(dir + "/log.txt");
    EXPECT_EQ(code, 2) << log;
    EXPECT_NE(log.find("the file is corrupt or truncated"), std::string::npos) << log;
    EXPECT_NE(log.find(file), std::string::npos) << log;
    std::ofstream(file, std::ios::binary) << original;
  }
}

}  // namespace
}  // namespace hyperpipe::runtime
