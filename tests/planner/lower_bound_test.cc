// iteration_lower_bound decides which plans the planner never simulates, so it must never
// exceed the simulated iteration: checked on random heterogeneous pipelines under every
// schedule, and against the closed form of 1F1B on identical stages.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <random>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {
namespace {

using schedule::ScheduleKind;

constexpr int kChainLayers = 26;  // gpt3-1.3b: the embedding, 24 blocks, the head

// `ranks` groups of one GPU each, drawn from a100-v100-t4's three types and two islands,
// the layers cut at random into `chunks` chunks per group.
plan::Plan random_plan(std::mt19937& random, int ranks, int chunks, int micro_batches) {
  plan::Plan plan;
  plan.model = "gpt3-1.3b";
  plan.cluster = "a100-v100-t4";
  plan.micro_batch_size = 1;
  plan.micro_batches = micro_batches;
  plan.chunks = chunks;
  std::vector<int> devices(16);
  std::iota(devices.begin(), devices.end(), 0);
  std::shuffle(devices.begin(), devices.end(), random);
  const int stages = ranks * chunks;
  std::vector<int> cuts(kChainLayers - 1);
  std::iota(cuts.begin(), cuts.end(), 1);
  std::shuffle(cuts.begin(), cuts.end(), random);
  cuts.resize(static_cast<size_t>(stages - 1));
  cuts.push_back(kChainLayers);
  std::sort(cuts.begin(), cuts.end());
  std::uniform_int_distribution<int> recompute(0, 2);
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    plan.stages.push_back({first,
                           cuts[s],
                           {devices[s % ranks]},
                           1,
                           1,
                           static_cast<model::Recompute>(recompute(random))});
    first = cuts[s];
  }
  return plan;
}

// A pipeline of one GPU per stage: {first layer, end layer, device} each, no recomputation.
plan::Plan one_gpu_stages(const std::string& model, const std::string& cluster,
                          int64_t micro_batch_size, int micro_batches,
                          const std::vector<std::array<int, 3>>& stages) {
  plan::Plan plan;
  plan.model = model;
  plan.cluster = cluster;
  plan.micro_batch_size = micro_batch_size;
  plan.micro_batches = micro_batches;
  for (const auto& [first, end, device] : stages) {
    plan.stages.push_back({first, end, {device}, 1, 1, model::Recompute::none});
  }
  return plan;
}

TEST(IterationLowerBound, NeverExceedsTheSimulation) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  std::mt19937 random(40);
  for (int trial = 0; trial < 24; ++trial) {
    const int ranks = 2 + trial % 5;
    const int micro_batches = 1 + (trial * 7) % 40;
    std::vector<plan::Plan> plans;
    for (const ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b,
                                    ScheduleKind::zb_h1, ScheduleKind::hetero_1f1b}) {
      plan::Plan plan = random_plan(random, ranks, 1, micro_batches);
      plan.schedule = kind;
      if (kind == ScheduleKind::hetero_1f1b) {
        // Deeper than 1F1B's, never deeper than the rank before.
        std::uniform_int_distribution<int> step(1, 2);
        plan.warmup.assign(static_cast<size_t>(ranks), step(random));
        for (int r = ranks - 2; r >= 0; --r) plan.warmup[r] = plan.warmup[r + 1] + step(random);
      }
      plans.push_back(plan);
    }
    plan::Plan interleaved = random_plan(random, std::min(ranks, 4), 2, micro_batches);
    interleaved.schedule = ScheduleKind::interleaved;
    plans.push_back(interleaved);
    for (plan::Plan& plan : plans) {
      plan.overlap_allreduce = trial % 2 == 1;
      const bool megatrons =
          plan.schedule == ScheduleKind::one_f_one_b || plan.schedule == ScheduleKind::interleaved;
      if (trial % 3 == 2 && (megatrons || plan.schedule == ScheduleKind::gpipe)) {
        plan.runtime = plan::Framework::torchtitan;
      }
      if (trial % 3 == 1 && megatrons) {
        // Blocking exchanges, one recomputation for every stage.
        plan.runtime = plan::Framework::megatron;
        for (auto& stage : plan.stages) stage.recompute = model::Recompute::full;
      }
      const std::string what =
          fmt::format("trial {}: {} ranks × {} chunks, {}, {} micro-batches, {}", trial,
                      plan.ranks(), plan.chunks, schedule::to_string(plan.schedule), micro_batches,
                      plan::to_string(plan.runtime));
      plan::check_plan(plan, model, cluster, what);
      const double simulated = score_plan(costs, plan, "").iteration_time();
      EXPECT_LE(iteration_lower_bound(costs, plan), simulated * (1 + 1e-12)) << what;
    }
  }
}

// Identical stages, NVLink between them: 1F1B takes (m + S − 1)(F + B), the fill and the
// drain, then the first stage's all-reduce and step; the bound counts the same, so it is
// tight but for transfers of microseconds. Without the drain it would miss (S − 1)·B.
TEST(IterationLowerBound, CountsTheFillAndTheDrainOf1F1B) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100x8");
  const cost::CostModel costs(model, cluster);
  plan::Plan plan = one_gpu_stages("gpt3-1.3b", "a100x8", 2, 16,
                                   {{0, 7, 0}, {7, 13, 1}, {13, 19, 2}, {19, 26, 3}});
  plan::check_plan(plan, model, cluster, "test");
  const double simulated = score_plan(costs, plan, "").iteration_time();
  const double bound = iteration_lower_bound(costs, plan);
  EXPECT_LE(bound, simulated);
  EXPECT_GE(bound, 0.99 * simulated);
  // The middle stages' backward alone, which the drain adds.
  const auto group = cost::make_device_group(cluster, {1}, 1, 1);
  const double middle_backward =
      costs.range_time(7, 13, group, 2, model.config().seq_len, model::Recompute::none).backward();
  plan.schedule = ScheduleKind::zb_h1;  // no drain: its weight gradients may come last
  EXPECT_LT(iteration_lower_bound(costs, plan) + 2 * middle_backward, bound * 1.001);
}

// Two stages either side of far-island's 2 Gbit/s VPN, GPT-3 125M: each micro-batch's
// activation and gradient take longer on the link than the stages compute, so 1F1B's two
// micro-batches in flight on the first stage wait on their round trips: the bound counts
// one round trip per two micro-batches, more than the compute alone.
TEST(IterationLowerBound, CountsTheRoundTripsOfMicroBatchesInFlight) {
  const auto model = model::load_model("gpt3-125m");
  const auto cluster = cluster::load_cluster("far-island");
  const cost::CostModel costs(model, cluster);
  const plan::Plan plan =
      one_gpu_stages("gpt3-125m", "far-island", 1, 32, {{0, 7, 0}, {7, 14, 16}});
  plan::check_plan(plan, model, cluster, "test");
  const int64_t seq = model.config().seq_len;
  const auto first = cost::make_device_group(cluster, {0}, 1, 1);
  const auto second = cost::make_device_group(cluster, {16}, 1, 1);
  const auto link = cluster.link_between(0, 16);
  const auto compute_first = costs.range_time(0, 7, first, 1, seq, model::Recompute::none);
  const auto compute_second = costs.range_time(7, 14, second, 1, seq, model::Recompute::none);
  const double round_trip = compute_first.total() + compute_second.total() +
                            costs.cut_transfer(6, 1, seq, first, second, link).seconds +
                            costs.cut_transfer(6, 1, seq, second, first, link).seconds;
  const double bound = iteration_lower_bound(costs, plan);
  EXPECT_GE(bound, plan.micro_batches / 2 * round_trip);
  EXPECT_GT(plan.micro_batches / 2 * round_trip,
            plan.micro_batches * std::max(compute_first.total(), compute_second.total()));
  EXPECT_LE(bound, score_plan(costs, plan, "").iteration_time());
}

}  // namespace
}  // namespace hyperpipe::planner
