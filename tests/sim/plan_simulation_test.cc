#include "hyperpipe/sim/plan_simulation.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"

namespace hyperpipe::sim {
namespace {

using schedule::ScheduleKind;

const std::string kExamples = HYPERPIPE_EXAMPLES;

plan::Plan two_stage_plan(int first_stage_layers) {
  plan::Plan plan;
  plan.model = "gpt3-1.3b";  // 26 layers in the chain
  plan.cluster = "a100-v100-t4";
  plan.micro_batch_size = 2;
  plan.micro_batches = 8;
  plan.stages = {{0, first_stage_layers, {0, 1}, 2, 1, model::Recompute::full},
                 {first_stage_layers, 26, {4, 5}, 2, 1, model::Recompute::full}};
  return plan;
}

TEST(PlanSimulation, CostsComeFromTheCostModel) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const plan::Plan plan = two_stage_plan(13);
  plan::check_plan(plan, model, cluster, "test");
  const PlanSimulation result = simulate_plan(costs, plan);
  const auto group = cost::make_device_group(cluster, {4, 5}, 2, 1);
  const auto expected = costs.range_time(13, 26, group, 2, 2048, model::Recompute::full);
  EXPECT_DOUBLE_EQ(result.stages[1].compute.forward, expected.forward);
  // The iteration is at least the slower stage's compute for all micro-batches.
  EXPECT_GT(result.output.iteration_time, 8 * expected.total());
  EXPECT_EQ(result.devices, 4);
  EXPECT_DOUBLE_EQ(result.tokens_per_s, 16.0 * 2048 / result.output.iteration_time);
  EXPECT_GT(result.mfu, 0.0);
  EXPECT_LT(result.mfu, 1.0);
  EXPECT_EQ(result.output.timeline.tracks[1].name, "stage 1: V100-16GB ×2 [4-5]");
}

// The plan's runtime decides how exchanges meet compute: DeepSpeed's blocking pairs, as
// --p2p blocking; torchtitan posts them beside compute, as HyperPipe does.
TEST(PlanSimulation, RuntimeDecidesHowExchangesMeetCompute) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  plan::Plan plan = two_stage_plan(13);
  const double async = simulate_plan(costs, plan).output.iteration_time;
  SimOptions blocking;
  blocking.p2p = P2pMode::blocking;
  const double blocked = simulate_plan(costs, plan, blocking).output.iteration_time;
  EXPECT_GT(blocked, async);
  plan.runtime = plan::Framework::deepspeed;
  EXPECT_DOUBLE_EQ(simulate_plan(costs, plan).output.iteration_time, blocked);
  SimOptions asked_async;
  asked_async.p2p = P2pMode::async;  // an explicit mode wins over the runtime's
  EXPECT_DOUBLE_EQ(simulate_plan(costs, plan, asked_async).output.iteration_time, async);
  plan.runtime = plan::Framework::torchtitan;
  EXPECT_DOUBLE_EQ(simulate_plan(costs, plan).output.iteration_time, async);
}

// On a CPU stand-in the thread that computes also runs the runtime: torchtitan's (PyTorch
// pipelining's) host time adds to each forward and each backward. One stage, so no
// bubble or transfer: the iteration grows by exactly 2 × micro-batches × that time. On
// GPUs it is hidden (RuntimeDecidesHowExchangesMeetCompute: torchtitan as async).
TEST(PlanSimulation, PyTorchsHostTimeAddsToEachActionOnStandIns) {
  const auto model = model::load_model(kExamples + "/models/tiny-gpt.yaml");
  const auto cluster = cluster::load_cluster(kExamples + "/clusters/cpu-one-node.yaml");
  const cost::CostModel costs(model, cluster);
  for (const auto kind : {schedule::ScheduleKind::gpipe, schedule::ScheduleKind::one_f_one_b}) {
    plan::Plan plan;
    plan.model = "tiny-gpt";
    plan.cluster = "cpu-one-node";
    plan.micro_batch_size = 2;
    plan.micro_batches = 4;
    plan.schedule = kind;
    plan.stages = {{0, model.num_layers(), {0}, 1, 1, model::Recompute::none}};
    plan::check_plan(plan, model, cluster, "test");
    const double own = simulate_plan(costs, plan).output.iteration_time;
    plan.runtime = plan::Framework::torchtitan;
    const double host = plan::host_seconds_per_action(plan::traits(plan.runtime), kind);
    ASSERT_GT(host, 0.0);
    EXPECT_NEAR(simulate_plan(costs, plan).output.iteration_time, own + 2 * 4 * host, 1e-12)
        << schedule::to_string(kind);
  }
}

TEST(PlanSimulation, MovingLayersToTheFasterGpuHelps) {
  // A100s are about twice as fast as V100s here: an even split leaves the A100s idle.
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const double even = simulate_plan(costs, two_stage_plan(13)).output.iteration_time;
  const double skewed = simulate_plan(costs, two_stage_plan(17)).output.iteration_time;
  EXPECT_LT(skewed, even);
}

TEST(PlanSimulation, ExamplePlanRuns) {
  const std::string path = kExamples + "/plans/gpt3-2.7b-4stage.json";
  const plan::Plan plan = plan::load_plan(path);
  const auto model = model::load_model(plan.model);
  const auto cluster = cluster::load_cluster(plan::resolve_reference(path, plan.cluster));
  plan::check_plan(plan, model, cluster, path);
  const cost::CostModel costs(model, cluster);
  const PlanSimulation result = simulate_plan(costs, plan);
  ASSERT_EQ(result.output.ranks.size(), 4u);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_LE(result.output.ranks[r].peak_memory_bytes, result.memory_capacity[r]) << r;
    EXPECT_EQ(result.output.ranks[r].peak_in_flight, 4 - static_cast<int>(r));
  }
  // The slow link between the islands (A100 → V100) makes stage 1 wait on transfers.
  EXPECT_GT(result.output.ranks[1].comm_wait, 0.0);
}

// The planner scores candidates without their timelines: the same figures, the tracks
// named, nothing recorded on them. Interleaved over the islands' link, so that transfers
// queue, with the all-reduce beside the backward.
TEST(PlanSimulation, WithoutTheTimelineTheFiguresAreTheSame) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  plan::Plan plan;
  plan.model = "gpt3-1.3b";
  plan.cluster = "a100-v100-t4";
  plan.micro_batch_size = 2;
  plan.micro_batches = 12;
  plan.schedule = schedule::ScheduleKind::interleaved;
  plan.chunks = 2;
  plan.overlap_allreduce = true;
  plan.stages = {{0, 7, {0, 1}, 2, 1, model::Recompute::none},
                 {7, 13, {4, 5}, 2, 1, model::Recompute::selective},
                 {13, 20, {0, 1}, 2, 1, model::Recompute::none},
                 {20, 26, {4, 5}, 2, 1, model::Recompute::selective}};
  plan::check_plan(plan, model, cluster, "test");
  const PlanSimulation drawn = simulate_plan(costs, plan);
  SimOptions figures_only;
  figures_only.timeline = false;
  const PlanSimulation bare = simulate_plan(costs, plan, figures_only);
  EXPECT_EQ(bare.output.iteration_time, drawn.output.iteration_time);
  EXPECT_EQ(bare.output.simulated_ops, drawn.output.simulated_ops);
  ASSERT_EQ(bare.output.ranks.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    const auto& got = bare.output.ranks[r];
    const auto& want = drawn.output.ranks[r];
    EXPECT_EQ(got.busy, want.busy) << r;
    EXPECT_EQ(got.comm_wait, want.comm_wait) << r;
    EXPECT_EQ(got.bubble, want.bubble) << r;
    EXPECT_EQ(got.allreduce, want.allreduce) << r;
    EXPECT_EQ(got.end, want.end) << r;
    EXPECT_EQ(got.peak_memory_bytes, want.peak_memory_bytes) << r;
    EXPECT_EQ(got.peak_in_flight, want.peak_in_flight) << r;
    const auto& track = bare.output.timeline.tracks[r];
    EXPECT_EQ(track.name, drawn.output.timeline.tracks[r].name);
    EXPECT_EQ(track.devices, drawn.output.timeline.tracks[r].devices);
    EXPECT_TRUE(track.ops.empty() && track.compute.empty() && track.communication.empty() &&
                track.memory.empty())
        << r;
    EXPECT_FALSE(drawn.output.timeline.tracks[r].compute.empty()) << r;
    EXPECT_FALSE(drawn.output.timeline.tracks[r].communication.empty()) << r;
  }
  EXPECT_GT(drawn.output.ranks[1].comm_wait, 0.0);  // transfers mattered
  // Nor the schedule's ops, which only a timeline reads; its shape stays.
  ASSERT_EQ(bare.schedules.size(), 1u);
  EXPECT_TRUE(bare.schedules[0].ops.empty());
  EXPECT_FALSE(drawn.schedules[0].ops.empty());
  EXPECT_EQ(bare.schedules[0].ranks, 2);
  EXPECT_EQ(bare.schedules[0].chunks, 2);
  EXPECT_EQ(bare.device_peaks.size(), drawn.device_peaks.size());
}

// The planner skips simulating plans this rules out, so the floor must never exceed the
// simulated peak, nor say "overflows" of a plan the simulation fits: random pipelines of GPT-3 1.3B
// over a100-v100-t4's 16 GB V100s and T4s and 40 GB A100s, under every schedule, at micro-batches
// large enough that many overflow and many fit. Where every backward is whole (1F1B, GPipe), the
// warm-up's forwards are the peak, so it is exact there.
TEST(PlanSimulation, OverflowBeforeAnyBackwardIsNeverWrong) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const int chain = model.num_layers();
  std::mt19937 random(41);
  int ruled_out = 0, fitting = 0;
  for (int trial = 0; trial < 60; ++trial) {
    plan::Plan plan;
    plan.model = "gpt3-1.3b";
    plan.cluster = "a100-v100-t4";
    plan.micro_batch_size = int64_t{1} << (trial % 4);
    plan.micro_batches = 8 + trial % 9;
    const int ranks = 3 + trial % 4;
    plan.chunks = trial % 5 == 4 ? 2 : 1;
    const ScheduleKind kinds[] = {ScheduleKind::one_f_one_b, ScheduleKind::gpipe,
                                  ScheduleKind::zb_h1, ScheduleKind::one_f_one_b};
    plan.schedule = plan.chunks == 2 ? ScheduleKind::interleaved : kinds[trial % 4];
    std::vector<int> devices(16);
    std::iota(devices.begin(), devices.end(), 0);
    std::shuffle(devices.begin(), devices.end(), random);
    const int stages = ranks * plan.chunks;
    std::uniform_int_distribution<int> recompute(0, 2);
    for (int s = 0; s < stages; ++s) {
      plan.stages.push_back({chain * s / stages,
                             chain * (s + 1) / stages,
                             {devices[s % ranks]},
                             1,
                             1,
                             static_cast<model::Recompute>(recompute(random))});
    }
    plan::check_plan(plan, model, cluster, "test");
    SimOptions figures_only;
    figures_only.timeline = false;
    const PlanSimulation simulated = simulate_plan(costs, plan, figures_only);
    bool fits = true;
    for (size_t r = 0; r < simulated.output.ranks.size(); ++r) {
      fits = fits && simulated.output.ranks[r].peak_memory_bytes <= simulated.memory_limit[r];
    }
    const bool overflows = overflows_before_any_backward(costs, plan);
    EXPECT_FALSE(overflows && fits) << "trial " << trial;
    const auto floor = memory_floor(costs, plan);
    ASSERT_EQ(floor.size(), simulated.output.ranks.size());
    const bool whole =
        plan.schedule == ScheduleKind::one_f_one_b || plan.schedule == ScheduleKind::gpipe;
    for (size_t r = 0; r < floor.size(); ++r) {
      const double peak = simulated.output.ranks[r].peak_memory_bytes;
      EXPECT_LE(floor[r], peak * (1 + 1e-12)) << "trial " << trial << ", rank " << r;
      // With whole backwards the forwards of the warm-up are the peak: exact there.
      if (whole) {
        EXPECT_NEAR(floor[r], peak, 1e-9 * peak) << "trial " << trial << ", rank " << r;
      }
    }
    if (whole) {
      EXPECT_EQ(overflows, !fits) << "trial " << trial;
    }
    ruled_out += overflows;
    fitting += fits;
  }
  // Not vacuous: it rules out some, and some fit.
  EXPECT_GT(ruled_out, 0);
  EXPECT_GT(fitting, 0);
}

// gpt3-1.3b over two pipelines of a100x8: pipeline 0 on devices 0-1, pipeline 1 on
// 2-3, cut after `cut0` and `cut1` layers, with 8 and `micro_batches1` micro-batches.
plan::Plan two_pipelines(int cut0, int cut1, int micro_batches1) {
  plan::Plan plan;
  plan.model = "gpt3-1.3b";
  plan.cluster = "a100x8";
  plan.micro_batch_size = 2;
  plan.micro_batches = 8;
  plan.stages = {{0, cut0, {0}, 1, 1, model::Recompute::none},
                 {cut0, 26, {1}, 1, 1, model::Recompute::none}};
  plan::Pipeline replica = plan;  // the pipeline fields of `plan`
  replica.micro_batches = micro_batches1;
  replica.stages = {{0, cut1, {2}, 1, 1, model::Recompute::none},
                    {cut1, 26, {3}, 1, 1, model::Recompute::none}};
  plan.replicas.push_back(replica);
  return plan;
}

class SeveralPipelines : public ::testing::Test {
 protected:
  const model::Model model = model::load_model("gpt3-1.3b");
  const cluster::Cluster cluster = cluster::load_cluster("a100x8");
  const cost::CostModel costs{model, cluster};
  const double gradient_bytes_per_param = 4;  // fp16 weights, fp32 main grads

  // Ring all-reduce of layers [first, end) over the two pipelines, between two A100s of
  // one node.
  double sync(int first, int end) const {
    return costs.allreduce_time(costs.range_params(first, end, 1) * gradient_bytes_per_param, 2,
                                cluster.link_between(0, 2));
  }
  // The tied embedding (vocabulary × hidden) summed between a pipeline's two stages.
  double tied_sum() const {
    const auto& config = model.config();
    return costs.allreduce_time(
        static_cast<double>(config.vocab * config.hidden) * gradient_bytes_per_param, 2,
        cluster.link_between(0, 1));
  }
  // The global norm and the loss (two doubles) summed over the four processes.
  double global_norm() const { return costs.allreduce_time(16, 4, cluster.link_between(0, 1)); }
};

TEST_F(SeveralPipelines, IdenticalPipelinesAddTheGradientSumAfterBothAreReduced) {
  const plan::Plan plan = two_pipelines(13, 13, 8);
  plan::check_plan(plan, model, cluster, "test");
  EXPECT_EQ(plan.global_batch(), 32);
  const PlanSimulation both = simulate_plan(costs, plan);
  plan::Plan alone = plan;
  alone.replicas.clear();
  const PlanSimulation one = simulate_plan(costs, alone);

  ASSERT_EQ(both.output.ranks.size(), 4u);
  EXPECT_EQ(both.first_rank, (std::vector<int>{0, 2}));
  EXPECT_EQ(both.devices, 4);
  // Closed form: the sum starts when the later rank has reduced, each rank sums its own
  // layers; then the tied embedding between the stages, the global norm over all, and each
  // rank steps its optimizer.
  const auto& ranks = one.output.ranks;
  const double barrier = std::max(ranks[0].reduced, ranks[1].reduced);
  const double expected = barrier + std::max(sync(0, 13), sync(13, 26)) + tied_sum() +
                          global_norm() + std::max(ranks[0].optimizer, ranks[1].optimizer);
  EXPECT_NEAR(both.output.iteration_time, expected, 1e-12);
  EXPECT_DOUBLE_EQ(both.stages[0].replica_sync, sync(0, 13));
  EXPECT_DOUBLE_EQ(both.stages[3].replica_sync, sync(13, 26));
  EXPECT_DOUBLE_EQ(both.tokens_per_s, 32.0 * 2048 / both.output.iteration_time);
  EXPECT_EQ(both.output.timeline.tracks[2].name, "pipeline 1, stage 0: A100-80GB ×1 [2]");
  EXPECT_EQ(both.output.timeline.tracks[3].devices, (std::vector<int>{3}));
}

TEST_F(SeveralPipelines, GradientsAreSummedPerRunOfLayersHeldTogether) {
  // Pipeline 0 cuts after 10 layers, pipeline 1 after 13: pipeline 0's second stage sums
  // layers 10-12 with pipeline 1's first stage and 13-25 with its second.
  const PlanSimulation result = simulate_plan(costs, two_pipelines(10, 13, 8));
  EXPECT_DOUBLE_EQ(result.stages[0].replica_sync, sync(0, 10));
  EXPECT_DOUBLE_EQ(result.stages[1].replica_sync, sync(10, 13) + sync(13, 26));
  EXPECT_DOUBLE_EQ(result.stages[2].replica_sync, sync(0, 10) + sync(10, 13));
  EXPECT_DOUBLE_EQ(result.stages[3].replica_sync, sync(13, 26));
}

TEST_F(SeveralPipelines, TheSmallerShareWaitsForTheLargerAndItsIdleTimeCountsAsBubble) {
  const PlanSimulation result = simulate_plan(costs, two_pipelines(13, 13, 4));
  const auto& ranks = result.output.ranks;
  // Pipeline 1 runs half the micro-batches: it reduces first and waits at the barrier.
  EXPECT_LT(ranks[2].reduced, ranks[0].reduced);
  EXPECT_GT(ranks[2].replica_sync, result.stages[2].replica_sync);
  for (const auto& rank : ranks) {
    EXPECT_NEAR(rank.busy + rank.comm_wait + rank.bubble + rank.allreduce + rank.epilogue_sync() +
                    rank.optimizer,
                result.output.iteration_time, 1e-9);
  }
  EXPECT_GT(ranks[2].bubble + ranks[2].replica_sync, ranks[0].bubble + ranks[0].replica_sync);
}

}  // namespace
}  // namespace hyperpipe::sim
