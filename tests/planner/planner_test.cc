#include "hyperpipe/planner/planner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/planner/candidate_search.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {
namespace {

PlanRequest request(const std::string& model, const std::string& cluster, int64_t batch) {
  PlanRequest r;
  r.batch = {model, cluster, batch, 0, micro_batch_sizes(batch)};
  return r;
}

// Each phase counts what it simulated, and together they count every plan make_plan
// simulated on this thread.
TEST(Planner, ReportsWhereItsTimeWent) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const SimulationTally before = simulation_tally();
  const PlanResult result = make_plan(costs, request("gpt3-1.3b", "a100-v100-t4", 32));
  const SimulationTally after = simulation_tally();
  std::vector<std::string> names;
  int64_t simulations = 0, ops = 0;
  double seconds = 0;
  for (const auto& phase : result.phases) {
    names.push_back(phase.name);
    simulations += phase.simulations;
    ops += phase.simulated_ops;
    seconds += phase.seconds;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"search", "first pass", "schedules and refinement",
                                             "replicas", "baselines"}));
  EXPECT_EQ(simulations, after.simulations - before.simulations);
  EXPECT_EQ(ops, after.simulated_ops - before.simulated_ops);
  EXPECT_EQ(result.phases[0].simulations, 0);  // the search costs without simulating
  EXPECT_GT(result.phases[1].simulations, 0);
  EXPECT_GT(result.phases[4].simulations, 0);
  EXPECT_GE(seconds, result.search_seconds);
  EXPECT_DOUBLE_EQ(result.replica_seconds, result.phases[3].seconds);
}

// Progress as it plans: the phases in order, never going back, each step within its
// phase, the best so far never worse, ending at the plan returned with every simulation
// counted.
TEST(Planner, ReportsItsProgressEndingAtThePlanItReturns) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  std::vector<PlanProgress> reports;
  PlanRequest asked = request("gpt3-1.3b", "a100-v100-t4", 32);
  asked.peers = true;
  asked.progress = [&](const PlanProgress& progress) { reports.push_back(progress); };
  const SimulationTally before = simulation_tally();
  const PlanResult result = make_plan(costs, asked);
  const SimulationTally after = simulation_tally();
  ASSERT_GT(reports.size(), 10u);
  const std::vector<std::string> order{"search",   "first pass", "schedules and refinement",
                                       "replicas", "baselines",  "peers' spaces"};
  size_t phase = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto& report = reports[i];
    if (i + 1 == reports.size()) break;  // the last is "done"
    const auto at = std::find(order.begin(), order.end(), report.phase);
    ASSERT_NE(at, order.end()) << report.phase;
    EXPECT_GE(static_cast<size_t>(at - order.begin()), phase) << report.phase;
    phase = at - order.begin();
    EXPECT_LE(report.step, report.steps);
    if (i > 0) {
      EXPECT_GE(report.fraction, reports[i - 1].fraction - 1e-12) << report.phase;
      EXPECT_GE(report.simulations, reports[i - 1].simulations);
      if (reports[i - 1].best_iteration > 0) {
        EXPECT_LE(report.best_iteration, reports[i - 1].best_iteration);
      }
    }
  }
  EXPECT_EQ(phase, order.size() - 1);
  const PlanProgress& last = reports.back();
  EXPECT_EQ(last.phase, "done");
  EXPECT_DOUBLE_EQ(last.fraction, 1.0);
  EXPECT_DOUBLE_EQ(last.best_iteration, result.best.iteration_time());
  EXPECT_EQ(last.simulations, after.simulations - before.simulations);
}

// Planned for another framework: only plans it can express, simulated as it runs them.
TEST(Planner, PlansForAnotherFrameworkStayWithinWhatItExpresses) {
  // Megatron-LM's space found a plan 0.45% faster than the whole space's on this problem
  // (the op-level estimates, issue 39): the search's objective is not the simulation.
  constexpr double kSearchMiss = 0.01;
  const auto model = model::load_model("gpt3-2.7b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const double ours =
      make_plan(costs, request("gpt3-2.7b", "a100-v100-t4", 64)).best.iteration_time();
  for (auto framework : {plan::Framework::megatron, plan::Framework::deepspeed}) {
    PlanRequest r = request("gpt3-2.7b", "a100-v100-t4", 64);
    restrict_to_framework(framework, r);
    EXPECT_TRUE(r.space.same_dp && r.space.same_tp);
    EXPECT_FALSE(r.replicas);
    const PlanResult result = make_plan(costs, r);
    const plan::Plan& best = result.best.plan;
    EXPECT_TRUE(result.best.fits);
    EXPECT_EQ(best.runtime, framework);
    EXPECT_TRUE(within(best, r.space));
    const auto refused = plan::refusal(best, framework);
    EXPECT_FALSE(refused) << refused->field << ": " << refused->reason;
    // A smaller space, and slower exchanges: not faster than HyperPipe's own plan, but for
    // what the search misses: it ranks candidates by an estimate of the simulation
    // (bench/planner_optimality measures how far from the complete search it lands).
    EXPECT_GE(result.best.iteration_time(), ours * (1 - kSearchMiss)) << to_string(framework);
    // The simulation is the framework's: the same plan costed as HyperPipe runs it differs.
    plan::Plan as_ours = best;
    as_ours.runtime = plan::Framework::hyperpipe;
    if (plan::blocks_on_p2p(best)) {
      EXPECT_LT(sim::simulate_plan(costs, as_ours).output.iteration_time,
                result.best.iteration_time());
    }
  }
  PlanRequest gpipe_only = request("gpt3-2.7b", "a100-v100-t4", 64);
  gpipe_only.space.schedules = {schedule::ScheduleKind::gpipe};
  EXPECT_THROW(restrict_to_framework(plan::Framework::deepspeed, gpipe_only), InputError);
}

// Every plan the planner makes (the best, each order's, the replicas', the baselines', the
// peers') names the request's model and cluster and carries its runtime and sequence.
TEST(Planner, EveryPlanCarriesTheRequestsSettings) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  PlanRequest asked = request("models/gpt.yaml", "clusters/mixed.yaml", 32);
  asked.batch.seq_len = 1024;
  asked.every_order = true;
  asked.peers = true;
  const PlanResult result = make_plan(cost::CostModel(model, cluster), asked);
  std::vector<const ScoredPlan*> plans{&result.best};
  for (const auto* list : {&result.per_order, &result.baselines, &result.peers}) {
    for (const auto& scored : *list) plans.push_back(&scored);
  }
  ASSERT_GT(plans.size(), 3u);
  for (const ScoredPlan* scored : plans) {
    EXPECT_EQ(scored->plan.model, "models/gpt.yaml") << scored->label;
    EXPECT_EQ(scored->plan.cluster, "clusters/mixed.yaml") << scored->label;
    EXPECT_EQ(scored->plan.seq_len, 1024) << scored->label;
    EXPECT_EQ(scored->plan.runtime, plan::Framework::hyperpipe) << scored->label;
  }
}

TEST(Planner, MixedClusterPlanFitsAndBeatsEveryBaseline) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const PlanResult result = make_plan(costs, request("gpt3-2.7b", "a100-v100-t4", 64));
  EXPECT_TRUE(result.best.fits);
  plan::check_plan(result.best.plan, model, cluster, "planned");  // a valid plan document
  ASSERT_EQ(result.baselines.size(), 3u);
  for (const auto& baseline : result.baselines) {
    if (baseline.fits) {
      EXPECT_LE(result.best.iteration_time(), baseline.iteration_time()) << baseline.label;
    }
  }
  // Faster GPU types get more layers per GPU: A100 > V100 > T4.
  std::map<std::string, double> layers_per_gpu;
  std::map<std::string, int> gpus;
  for (size_t s = 0; s < result.best.plan.stages.size(); ++s) {
    const auto& stage = result.best.plan.stages[s];
    const std::string type = result.best.simulation.stages[s].gpu_type;
    layers_per_gpu[type] += stage.end_layer - stage.first_layer;
    gpus[type] += static_cast<int>(stage.devices.size());
  }
  for (auto& [type, layers] : layers_per_gpu) layers /= gpus[type];
  ASSERT_TRUE(layers_per_gpu.count("A100-40GB") && layers_per_gpu.count("V100-16GB"));
  EXPECT_GT(layers_per_gpu["A100-40GB"], layers_per_gpu["V100-16GB"]);
  // The search is deterministic.
  const PlanResult again = make_plan(costs, request("gpt3-2.7b", "a100-v100-t4", 64));
  EXPECT_EQ(again.best.plan.stages.size(), result.best.plan.stages.size());
  EXPECT_DOUBLE_EQ(again.best.iteration_time(), result.best.iteration_time());
}

TEST(Planner, HomogeneousClusterBalancesTheWork) {
  // Eight single-GPU A100 nodes: GPT-3 2.7B does not fit one GPU, so it is pipelined. With
  // identical devices no group may idle for want of work: each group's compute is within
  // two blocks' of the busiest's (layers are whole: with 32 blocks and a head over 8 stages
  // the slowest holds 5 blocks' worth, and a stage beside it may hold 3 at no cost; the
  // embedding and the head cost, and the front stages' 1F1B memory beside what each device
  // holds besides the model — context, communicators, the margin — tilt the split), and
  // the plan is at least as fast as every even split the baselines try.
  constexpr double kBlocksOfSlack = 2;
  std::string yaml = "nodes:\n";
  for (int n = 0; n < 8; ++n)
    yaml += "  - {name: n" + std::to_string(n) + ", gpu: A100-40GB, count: 1}\n";
  yaml += "links:\n  intra_island: {bandwidth: 100 Gbit/s, latency: 5 us}\n";
  const auto cluster = cluster::read_cluster_yaml(YamlField::load_string(yaml, "homogeneous"));
  const auto model = model::load_model("gpt3-2.7b");
  const cost::CostModel costs(model, cluster);
  const PlanResult result = make_plan(costs, request("gpt3-2.7b", "homogeneous", 64));
  ASSERT_TRUE(result.best.fits);
  ASSERT_GE(result.best.plan.stages.size(), 2u);
  double busiest = 0, idlest = 1e30;
  for (const auto& rank : result.best.simulation.output.ranks) {
    busiest = std::max(busiest, rank.busy);
    idlest = std::min(idlest, rank.busy);
  }
  // One block's compute over the iteration, on a group shaped as the first stage's.
  const auto& first = result.best.plan.pipeline(0);
  const auto group = cost::make_device_group(cluster, first.stages[0].devices, first.stages[0].dp,
                                             first.stages[0].tp);
  const double block = costs
                           .range_time(1, 2, group, first.micro_batch_size, model.config().seq_len,
                                       model::Recompute::none)
                           .total() *
                       static_cast<double>(first.micro_batches);
  EXPECT_GE(idlest, busiest - kBlocksOfSlack * block)
      << idlest / block << " vs " << busiest / block;
  EXPECT_LT(kBlocksOfSlack * block, 0.5 * busiest);  // the slack is not the whole stage
  for (const auto& baseline : result.baselines) {
    EXPECT_LE(result.best.iteration_time(), baseline.iteration_time()) << baseline.label;
  }
}

// Clusters of more than four nodes per class group whole nodes only; at a micro-batch of 1
// no (dp, tp) shape of a whole node is valid for gpt2 (12 heads: tp ≤ 4, so dp ≥ 2), and
// the search once read the first shape of that empty list (a segfault).
cluster::Cluster five_nodes_of(int gpus) {
  std::string yaml = "nodes:\n";
  for (int n = 0; n < 5; ++n) {
    yaml += fmt::format("  - {{name: n{}, gpu: A100-40GB, count: {}}}\n", n, gpus);
  }
  yaml +=
      "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
      "  intra_island: {bandwidth: 100 Gbit/s, latency: 5 us}\n";
  return cluster::read_cluster_yaml(YamlField::load_string(yaml, "five-nodes"));
}

TEST(Planner, ClassWithNoShapeAtSomeMicroBatchIsSkipped) {
  const auto cluster = five_nodes_of(8);
  const auto model = model::load_model("gpt2");
  const cost::CostModel costs(model, cluster);
  const PlanResult result = make_plan(costs, request("gpt2", "c5x8", 8));
  EXPECT_TRUE(result.best.fits);
  plan::check_plan(result.best.plan, model, cluster, "planned");
  for (const auto& stage : result.best.plan.stages) {
    EXPECT_EQ(stage.devices.size() % 8, 0u);  // whole nodes
    EXPECT_LE(stage.dp, result.best.plan.micro_batch_size);
  }
}

// Whole nodes of 64 GPUs need dp ≥ 16 (tp ≤ 4), more than a batch of 4 has sequences.
TEST(Planner, NoValidGroupShapeSaysSoRatherThanBlamingMemory) {
  const auto cluster = five_nodes_of(64);
  const auto model = model::load_model("gpt2");
  const cost::CostModel costs(model, cluster);
  try {
    make_plan(costs, request("gpt2", "five-nodes", 4));
    FAIL() << "a plan was found";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("no device group is valid"), std::string::npos) << message;
    EXPECT_NE(message.find("64 GPUs"), std::string::npos) << message;
  }
}

// A model whose weights, gradients and Adam state outweigh every GPU's memory together is
// refused before any search, with the reason a search would have ended with; a model that
// fits together is searched (the check never refuses what a plan could hold).
TEST(Planner, ModelsBeyondTheWholeClustersMemoryAreRefusedAsASearchWouldBe) {
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const auto giant = model::load_model("gpt3-175b");
  const cost::CostModel giant_costs(giant, cluster);
  const PlanRequest asked = request("gpt3-175b", "a100-v100-t4", 64);
  try {
    make_plan(giant_costs, asked);
    FAIL() << "a plan was found";
  } catch (const InputError& error) {
    const std::string message = error.expected();
    EXPECT_EQ(message, infeasibility_reason(giant_costs, asked));
    EXPECT_NE(message.find("that all 16 GPUs of a100-v100-t4 hold together"), std::string::npos)
        << message;
  }
  // GPT-3 13B: its static state fits in what the 16 GPUs hold together: searched, planned.
  const auto large = model::load_model("gpt3-13b");
  const cost::CostModel large_costs(large, cluster);
  EXPECT_TRUE(make_plan(large_costs, request("gpt3-13b", "a100-v100-t4", 64)).best.fits);
}

TEST(CandidateSearch, PruningNeverChangesTheBest) {
  // The probe, the bounds across micro-batch sizes and orders: the same best objective as
  // searching every order of every size to its end.
  for (const char* name : {"a100-v100-t4", "h100-a100-islands"}) {
    const auto model = model::load_model("gpt3-2.7b");
    const auto cluster = cluster::load_cluster(name);
    const cost::CostModel costs(model, cluster);
    const auto classes = device_classes(cluster);
    CandidateOptions options;
    options.global_batch = 64;
    options.micro_batch_sizes = micro_batch_sizes(64);
    const auto pruned = search_candidates(costs, classes, options);
    options.every_order = true;
    const auto full = search_candidates(costs, classes, options);
    ASSERT_FALSE(pruned.candidates.empty());
    EXPECT_DOUBLE_EQ(pruned.candidates.front().pipeline.objective,
                     full.candidates.front().pipeline.objective)
        << name;
    EXPECT_EQ(pruned.candidates.front().micro_batch, full.candidates.front().micro_batch) << name;
  }
}

TEST(Planner, ModelThatBarelyFitsUsesRecomputationOrMoreStages) {
  // 6.7B parameters need ~100 GiB of weights, gradients and Adam state: no single GPU
  // here holds it, so the plan must cut it into stages and recompute where memory is short.
  const auto model = model::load_model("gpt3-6.7b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const PlanResult result = make_plan(costs, request("gpt3-6.7b", "a100-v100-t4", 32));
  EXPECT_TRUE(result.best.fits);
  int recomputing = 0;
  for (const auto& stage : result.best.plan.stages) {
    recomputing += stage.recompute != model::Recompute::none;
  }
  EXPECT_TRUE(result.best.plan.stages.size() >= 3 || recomputing > 0);
}

TEST(Planner, ImpossibleModelSaysWhyInNumbers) {
  const auto model = model::load_model("gpt3-175b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  try {
    make_plan(costs, request("gpt3-175b", "a100-v100-t4", 16));
    FAIL() << "expected no plan";
  } catch (const InputError& error) {
    const std::string message = error.what();
    // 175.2 B parameters stored (the head keeps its copy of the tied embedding) × 16 bytes,
    // against 4 × 39 + 12 × 15 GiB.
    EXPECT_NE(message.find("gpt3-175b needs 2.87 TiB for weights, gradients and Adam state, "
                           "more than the 330 GiB that all 16 GPUs of a100-v100-t4 hold"),
              std::string::npos)
        << message;
  }
}

TEST(Planner, EveryOrderWhenAskedToExplain) {
  const auto model = model::load_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  PlanRequest r = request("gpt3-1.3b", "a100-v100-t4", 32);
  r.every_order = true;
  const PlanResult result = make_plan(costs, r);
  // 3 classes: 3 + 6 + 6 = 15 orders, each with a feasible plan for this small model,
  // then the 4 splits of the classes into pipelines side by side.
  ASSERT_EQ(result.per_order.size(), 19u);
  for (size_t i = 0; i < result.per_order.size(); ++i) {
    EXPECT_EQ(result.per_order[i].plan.pipeline_count() > 1, i >= 15) << i;
  }
  for (const auto& scored : result.per_order) {
    EXPECT_LE(result.best.iteration_time(), scored.iteration_time() + 1e-12);
  }
}

TEST(Interleave, EachGroupKeepsItsLayersInChunks) {
  plan::Plan plan;
  plan.model = "gpt2";
  plan.cluster = "a100x8";
  plan.micro_batch_size = 2;
  plan.micro_batches = 8;
  plan.stages = {{0, 9, {0}, 1, 1, model::Recompute::none},
                 {9, 14, {1, 2}, 2, 1, model::Recompute::full}};
  const auto interleaved = interleave(plan, 2);
  ASSERT_TRUE(interleaved.has_value());
  EXPECT_EQ(interleaved->chunks, 2);
  EXPECT_EQ(interleaved->schedule, schedule::ScheduleKind::interleaved);
  ASSERT_EQ(interleaved->stages.size(), 4u);
  // Group 0 holds 9 layers as 5 + 4, group 1 its 5 as 3 + 2, in pipeline order
  // g0c0 g1c0 g0c1 g1c1.
  const std::vector<std::pair<int, int>> ranges{{0, 5}, {5, 8}, {8, 12}, {12, 14}};
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(interleaved->stages[s].first_layer, ranges[s].first);
    EXPECT_EQ(interleaved->stages[s].end_layer, ranges[s].second);
    EXPECT_EQ(interleaved->stages[s].devices, plan.stages[s % 2].devices);
  }
  const auto model = model::load_model("gpt2");
  plan::Plan checked = plan;
  checked.pipeline(0) = *interleaved;
  plan::check_plan(checked, model, cluster::load_cluster("a100x8"), "interleaved");
  EXPECT_FALSE(interleave(plan, 6).has_value());  // group 1 has only 5 layers
}

TEST(BestSchedule, OverlapsTheAllReduceWhereTheSimulatorSaysItPays) {
  // Two groups of dp 4 over a slow link: the all-reduces are long, and the interleaved
  // chunks finish at different times, so overlapping hides some of them.
  plan::Plan plan;
  plan.model = "gpt2";
  plan.cluster = "a100x8";
  plan.micro_batch_size = 8;
  plan.micro_batches = 8;
  plan.stages = {{0, 7, {0, 1, 2, 3}, 4, 1, model::Recompute::none},
                 {7, 14, {4, 5, 6, 7}, 4, 1, model::Recompute::none}};
  const auto model = model::load_model("gpt2");
  const auto cluster = cluster::load_cluster("a100x8");
  const cost::CostModel costs(model, cluster);
  plan::Plan interleaved = plan;
  interleaved.pipeline(0) = *interleave(plan, 2);
  const ScoredPlan plain = score_plan(costs, interleaved, "plain");
  const auto best = best_schedule(costs, interleaved, "best");
  ASSERT_TRUE(best);
  EXPECT_TRUE(best->plan.overlap_allreduce);
  EXPECT_LT(best->iteration_time(), plain.iteration_time());
}

TEST(Baselines, UniformCutsTypePureGroupsAndEqualBlocks) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster);
  const auto uniform =
      best_baseline(costs, request("gpt3-2.7b", "a100-v100-t4", 64).batch, Baseline::uniform);
  ASSERT_TRUE(uniform.has_value());
  const auto& stages = uniform->plan.stages;
  const int blocks = 32 / static_cast<int>(stages.size());
  for (size_t s = 0; s < stages.size(); ++s) {
    const int extra = (s == 0) + (s + 1 == stages.size());
    EXPECT_EQ(stages[s].end_layer - stages[s].first_layer, blocks + extra);
    EXPECT_EQ(stages[s].tp, 1);
  }
  plan::check_plan(uniform->plan, model, cluster, "uniform");
}

}  // namespace
}  // namespace hyperpipe::planner
