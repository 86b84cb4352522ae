#include "hyperpipe/planner/exhaustive_search.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/planner/planner.h"

namespace hyperpipe::planner {
namespace {

model::Model gpt(int blocks, int hidden) {
  const std::string yaml = fmt::format(
      "name: judge-gpt\nflavour: gpt\nhidden: {}\nlayers: {}\nheads: 16\nvocab: 50257\n"
      "seq_len: 1024\ndtype: fp16\n",
      hidden, blocks);
  return model::Model(model::read_model_yaml(YamlField::load_string(yaml, "judge-gpt")));
}

// Nodes as (GPU type, GPUs, island); two islands joined by a slow link.
cluster::Cluster cluster_of(const std::vector<std::tuple<std::string, int, int>>& nodes) {
  std::string yaml = "name: judge\nnodes:\n";
  std::string islands[2];
  for (size_t n = 0; n < nodes.size(); ++n) {
    const auto& [gpu, count, island] = nodes[n];
    yaml += fmt::format("  - {{name: n{}, gpu: {}, count: {}}}\n", n, gpu, count);
    islands[island] += (islands[island].empty() ? "" : ", ") + fmt::format("n{}", n);
  }
  yaml += "islands:\n";
  for (int i = 0; i < 2; ++i) {
    if (!islands[i].empty()) yaml += fmt::format("  - {{name: i{}, nodes: [{}]}}\n", i, islands[i]);
  }
  yaml +=
      "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
      "  intra_island: {bandwidth: 100 Gbit/s, latency: 5 us}\n"
      "  inter_island: {bandwidth: 10 Gbit/s, latency: 50 us}\n";
  return cluster::read_cluster_yaml(YamlField::load_string(yaml, "judge"));
}

struct Judged {
  double planned = 0;
  plan::Plan planned_plan;
  double exhaustive = 0;  // the best the enumeration found (planned if none beat it)
  ExhaustiveResult search;
};

Judged judge(const cost::CostModel& costs, int64_t global_batch, const PlanSpace& space = {}) {
  PlanRequest request;
  request.batch = {"judge-gpt", "judge", global_batch, 0,
                   space.micro_batch ? std::vector<int64_t>{space.micro_batch}
                                     : micro_batch_sizes(global_batch)};
  request.space = space;
  const PlanResult planned = make_plan(costs, request);
  EXPECT_TRUE(within(planned.best.plan, space));
  ExhaustiveOptions options;
  options.batch = request.batch;
  options.space = space;
  options.incumbent = planned.best.iteration_time();
  Judged judged;
  judged.planned = planned.best.iteration_time();
  judged.planned_plan = planned.best.plan;
  judged.search = exhaustive_search(costs, options);
  judged.exhaustive = judged.search.best ? judged.search.best->iteration_time() : judged.planned;
  EXPECT_LE(judged.search.bound_ratio_max, 1 + 1e-9) << "the bound is not admissible";
  return judged;
}

// Target of issue 16: the planner within 1% of the best plan of its space.
constexpr double kTolerance = 0.01;

void expect_near_best(const Judged& judged, const std::string& instance) {
  EXPECT_LE(judged.planned, judged.exhaustive * (1 + kTolerance))
      << instance << ": planner " << judged.planned << " s, exhaustive best " << judged.exhaustive
      << " s over " << judged.search.layouts << " layouts";
  if (judged.search.best && getenv("JUDGE_DEBUG")) {
    std::cout << instance << ": exhaustive found " << plan::to_json(judged.search.best->plan).dump()
              << "\n";
    std::cout << "planned: " << plan::to_json(judged.planned_plan).dump() << "\n";
  }
  std::cout << fmt::format("{}: planner {:.4f} s, best {:.4f} s, {} layouts, {:.2f} s\n", instance,
                           judged.planned, judged.exhaustive, judged.search.layouts,
                           judged.search.seconds);
}

// Small instances of the judge (bench/planner_optimality runs mid-size ones).
struct Instance {
  const char* name;
  int blocks;
  int hidden;
  std::vector<std::tuple<std::string, int, int>> nodes;  // (GPU type, GPUs, island)
  int64_t global_batch;
};

void PrintTo(const Instance& instance, std::ostream* out) {
  *out << instance.name;
}

class JudgedInstance : public ::testing::TestWithParam<Instance> {};

TEST_P(JudgedInstance, PlannerIsWithinOnePercentOfTheExhaustiveBest) {
  const Instance& instance = GetParam();
  const auto model = gpt(instance.blocks, instance.hidden);
  const auto cluster = cluster_of(instance.nodes);
  const cost::CostModel costs(model, cluster);
  expect_near_best(judge(costs, instance.global_batch), instance.name);
}

INSTANTIATE_TEST_SUITE_P(
    Clusters, JudgedInstance,
    ::testing::Values(
        Instance{
            "HomogeneousTwoNodesOfFour", 8, 2048, {{"A100-40GB", 4, 0}, {"A100-40GB", 4, 0}}, 32},
        Instance{"HomogeneousOneNodeOfEight", 8, 2048, {{"V100-32GB", 8, 0}}, 64},
        Instance{
            "TwoTypesAcrossTwoIslands", 8, 2048, {{"A100-40GB", 4, 0}, {"V100-16GB", 4, 1}}, 32},
        Instance{
            "ThreeTypes", 6, 2560, {{"A100-40GB", 4, 0}, {"V100-16GB", 4, 1}, {"T4", 4, 1}}, 32}),
    [](const ::testing::TestParamInfo<Instance>& info) { return std::string(info.param.name); });

// bench/planner_optimality's 32 A100s in nodes of 8 (faster links and longer sequences than
// cluster_of's): interleaved, groups of 8, 16 and 8 GPUs win, an arrangement the stage
// search's objective ranks below others of 3 stages (the planner's alternatives find it;
// without them the planner was 1.96% behind).
TEST(Planner, FindsTheArrangementAnInterleavedScheduleFavours) {
  std::string yaml = "name: judge\nnodes:\n";
  for (int n = 0; n < 4; ++n)
    yaml += fmt::format("  - {{name: n{}, gpu: A100-80GB, count: 8}}\n", n);
  yaml +=
      "islands:\n  - {name: i0, nodes: [n0, n1, n2, n3]}\n"
      "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
      "  intra_island: {bandwidth: 200 Gbit/s, latency: 5 us}\n"
      "  inter_island: {bandwidth: 25 Gbit/s, latency: 50 us}\n";
  const auto cluster = cluster::read_cluster_yaml(YamlField::load_string(yaml, "judge"));
  const auto model = model::Model(model::read_model_yaml(YamlField::load_string(
      "name: judge-gpt\nflavour: gpt\nhidden: 2048\nlayers: 8\nheads: 16\nvocab: 50257\n"
      "seq_len: 2048\ndtype: fp16\n",
      "judge-gpt")));
  const cost::CostModel costs(model, cluster);
  const Judged judged = judge(costs, 256);
  ASSERT_TRUE(judged.search.complete);
  expect_near_best(judged, "32 A100 in nodes of 8");
}

// Issue 16's example: OPT-350m's shape in fp32 on 32 nodes of 4 GH200-class GPUs, global
// batch 1024, with per-layer profiles. The planner once returned 4 groups of dp 32 while
// two stages of dp 64 (13 + 13 layers, 8 micro-batches of 128, 1F1B) simulate faster.
TEST(Planner, BeatsTheTwoStageDp64PlanOnOpt350mOver128Gpus) {
  const auto model = model::load_model(HYPERPIPE_TEST_DATA "/opt-350m-fp32.yaml");
  const auto cluster = cluster::load_cluster(HYPERPIPE_TEST_DATA "/gh200x128.yaml");
  const auto profiles = cost::ProfileDb::load_for(
      HYPERPIPE_TEST_DATA "/opt-350m-h200-profiles.json", model.config().name);
  const cost::CostModel costs(model, cluster, {}, &profiles);
  plan::Plan two_stages;
  two_stages.model = "opt-350m-fp32";
  two_stages.cluster = "gh200x128";
  two_stages.micro_batch_size = 128;
  two_stages.micro_batches = 8;
  for (int s = 0; s < 2; ++s) {
    plan::StagePlan stage{13 * s, 13 * (s + 1), {}, 64, 1, model::Recompute::none};
    for (int d = 0; d < 64; ++d) stage.devices.push_back(64 * s + d);
    two_stages.stages.push_back(stage);
  }
  const ScoredPlan reference = score_plan(costs, two_stages, "two stages of dp 64");
  ASSERT_TRUE(reference.fits);
  PlanRequest request;
  request.batch = {"opt-350m-fp32", "gh200x128", 1024, 0, micro_batch_sizes(1024)};
  const PlanResult planned = make_plan(costs, request);
  EXPECT_TRUE(planned.best.fits);
  EXPECT_LE(planned.best.iteration_time(), reference.iteration_time());
}

// Each restriction of the space is honoured by the planner (no plan breaks it) and the
// planner stays within 1% of the exhaustive best under it.
struct Restriction {
  const char* name;
  PlanSpace space;
};

void PrintTo(const Restriction& restriction, std::ostream* out) {
  *out << restriction.name;
}

class RestrictedSpace : public ::testing::TestWithParam<Restriction> {};

TEST_P(RestrictedSpace, PlannerHonoursItAndStaysNearTheBest) {
  const auto model = gpt(8, 2048);
  const auto cluster = cluster_of({{"A100-40GB", 4, 0}, {"A100-40GB", 4, 0}});
  const cost::CostModel costs(model, cluster);
  const PlanSpace& space = GetParam().space;
  const Judged judged = judge(costs, 32, space);
  EXPECT_TRUE(within(judged.planned_plan, space)) << plan::to_json(judged.planned_plan).dump();
  if (judged.search.best) {
    EXPECT_TRUE(within(judged.search.best->plan, space));
  }
  expect_near_best(judged, GetParam().name);
}

PlanSpace with_schedules(std::vector<schedule::ScheduleKind> kinds) {
  PlanSpace space;
  space.schedules = std::move(kinds);
  return space;
}

INSTANTIATE_TEST_SUITE_P(
    Restrictions, RestrictedSpace,
    ::testing::Values(
        Restriction{"1F1B only", with_schedules({schedule::ScheduleKind::one_f_one_b})},
        Restriction{"GPipe or interleaved", with_schedules({schedule::ScheduleKind::gpipe,
                                                            schedule::ScheduleKind::interleaved})},
        Restriction{"at most 2 stages",
                    [] {
                      PlanSpace space;
                      space.max_stages = 2;
                      return space;
                    }()},
        Restriction{"same dp on every stage",
                    [] {
                      PlanSpace space;
                      space.same_dp = true;
                      return space;
                    }()},
        Restriction{"no tensor parallelism",
                    [] {
                      PlanSpace space;
                      space.max_tp = 1;
                      return space;
                    }()},
        // The shape a user already runs (`plan --tp 2 --pp 2`, `--dp 2`, `--pp 3`,
        // `--recompute full`), the planner searching the rest.
        Restriction{"tp 2 pp 2",
                    [] {
                      PlanSpace space;
                      space.tp = 2;
                      space.stages = 2;
                      return space;
                    }()},
        Restriction{"dp 2",
                    [] {
                      PlanSpace space;
                      space.dp = 2;
                      return space;
                    }()},
        Restriction{"pp 3",
                    [] {
                      PlanSpace space;
                      space.stages = 3;
                      return space;
                    }()},
        Restriction{"full recomputation",
                    [] {
                      PlanSpace space;
                      space.recompute = model::Recompute::full;
                      return space;
                    }()}),
    [](const ::testing::TestParamInfo<Restriction>& info) {
      std::string name;
      for (const char* c = info.param.name; *c; ++c) {
        if (std::isalnum(static_cast<unsigned char>(*c))) name += *c;
      }
      return name;
    });

TEST(ExhaustiveSearch, FixedMicroBatchIsHonoured) {
  const auto model = gpt(8, 2048);
  const auto cluster = cluster_of({{"A100-40GB", 4, 0}, {"A100-40GB", 4, 0}});
  const cost::CostModel costs(model, cluster);
  PlanSpace space;
  space.micro_batch = 8;
  const Judged judged = judge(costs, 32, space);
  EXPECT_EQ(judged.planned_plan.pipeline_count(), 1);
  EXPECT_EQ(judged.planned_plan.micro_batch_size, 8);
  expect_near_best(judged, "micro-batch 8");
}

// The bounds only skip plans that cannot win: without them the same best is found.
TEST(ExhaustiveSearch, BoundsNeverChangeTheBest) {
  const auto model = gpt(4, 1024);
  const auto cluster = cluster_of({{"A100-40GB", 2, 0}, {"V100-16GB", 2, 1}});
  const cost::CostModel costs(model, cluster);
  ExhaustiveOptions options;
  options.batch = {"judge-gpt", "judge", 8, 0, micro_batch_sizes(8)};
  const auto pruned = exhaustive_search(costs, options);
  options.prune = false;
  const auto full = exhaustive_search(costs, options);
  ASSERT_TRUE(pruned.best && full.best);
  EXPECT_DOUBLE_EQ(pruned.best->iteration_time(), full.best->iteration_time());
  EXPECT_LT(pruned.layouts, full.layouts);
  EXPECT_LE(full.bound_ratio_max, 1 + 1e-9);
}

}  // namespace
}  // namespace hyperpipe::planner
