// Planner speed: the stage-construction search (all micro-batch sizes, all stage orders)
// for GPT-3 2.7B on the A100 + V100 + T4 example (issue target: under 50 ms), the whole
// make_plan on the problems issue 40 measured, and how the search and make_plan grow with
// GPUs and layers on generated clusters of four GPU types in two islands.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/planner/baselines.h"
#include "hyperpipe/planner/candidate_search.h"
#include "hyperpipe/planner/planner.h"
#include "hyperpipe/planner/replica_search.h"

namespace {

using namespace hyperpipe;

// The search alone, as make_plan runs it.
double search(const cost::CostModel& costs, int64_t global_batch) {
  planner::CandidateOptions options;
  options.global_batch = global_batch;
  options.micro_batch_sizes = planner::micro_batch_sizes(global_batch);
  options.keep = planner::kRescoredCandidates;
  const auto found =
      planner::search_candidates(costs, planner::device_classes(costs.cluster()), options);
  return found.candidates.empty() ? 0.0 : found.candidates.front().pipeline.objective;
}

// Argument 1: layers estimated by the roofline instead of op by op (the default), to see
// what each estimator costs the search.
cost::CostOptions estimated_by(const benchmark::State& state) {
  cost::CostOptions options;
  if (state.range(0) == 1) options.estimator = cost::Estimator::roofline;
  return options;
}

void BM_SearchGpt3_2_7bMixed16(benchmark::State& state) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster, estimated_by(state));
  for (auto _ : state) benchmark::DoNotOptimize(search(costs, 64));
}
BENCHMARK(BM_SearchGpt3_2_7bMixed16)
    ->ArgName("roofline")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);

// The whole `hyperpipe plan`: search, re-scoring by the simulator, baselines.
void BM_MakePlanGpt3_2_7bMixed16(benchmark::State& state) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto cluster = cluster::load_cluster("a100-v100-t4");
  const cost::CostModel costs(model, cluster, estimated_by(state));
  planner::PlanRequest request;
  request.batch = {"gpt3-2.7b", "a100-v100-t4", 64, 0, planner::micro_batch_sizes(64)};
  for (auto _ : state) benchmark::DoNotOptimize(planner::make_plan(costs, request));
}
BENCHMARK(BM_MakePlanGpt3_2_7bMixed16)
    ->ArgName("roofline")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);

// What make_plan did, as counters: plans simulated and the share of time each phase took.
void count_phases(benchmark::State& state, const planner::PlanResult& result) {
  double simulations = 0, total = 0;
  for (const auto& phase : result.phases) {
    simulations += static_cast<double>(phase.simulations);
    total += phase.seconds;
  }
  state.counters["simulations"] = simulations;
  for (const auto& phase : result.phases) {
    if (total > 0) state.counters[phase.name + " %"] = 100 * phase.seconds / total;
  }
}

// The rows issue 40 measured, one make_plan each (the command runs it once per sharding
// of the optimizer; bench/plan_time.py times the whole process): 0 gpt3-2.7b on
// a100-v100-t4 at 64 and 1 at 512, 2 llama2-70b on h100-a100-islands at 1024, 3 at 4096.
void BM_MakePlanIssueRows(benchmark::State& state) {
  struct Row {
    const char* model;
    const char* cluster;
    int64_t global_batch;
  };
  const Row rows[] = {{"gpt3-2.7b", "a100-v100-t4", 64},
                      {"gpt3-2.7b", "a100-v100-t4", 512},
                      {"llama2-70b", "h100-a100-islands", 1024},
                      {"llama2-70b", "h100-a100-islands", 4096}};
  const Row& row = rows[state.range(0)];
  const auto model = model::load_model(row.model);
  const auto cluster = cluster::load_cluster(row.cluster);
  const cost::CostModel costs(model, cluster);
  planner::PlanRequest request;
  request.batch = {row.model, row.cluster, row.global_batch, 0,
                   planner::micro_batch_sizes(row.global_batch)};
  planner::PlanResult result;
  for (auto _ : state) benchmark::DoNotOptimize(result = planner::make_plan(costs, request));
  count_phases(state, result);
}
BENCHMARK(BM_MakePlanIssueRows)
    ->ArgName("row")
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// A cluster of `gpus` GPUs: nodes of 8 (fewer for tiny clusters) of four types, two
// types per island.
cluster::Cluster generated_cluster(int gpus) {
  const int node = std::min(gpus / 4, 8);
  const int nodes_per_type = gpus / 4 / node;
  const char* types[] = {"H100-SXM", "A100-80GB", "V100-32GB", "T4"};
  std::string yaml = "name: generated\nnodes:\n";
  std::string islands = "islands:\n";
  for (int t = 0; t < 4; ++t) {
    if (t % 2 == 0) islands += fmt::format("  - name: island{}\n    nodes: [", t / 2);
    for (int n = 0; n < nodes_per_type; ++n) {
      yaml += fmt::format("  - {{name: t{}n{}, gpu: {}, count: {}}}\n", t, n, types[t], node);
      islands += fmt::format("{}t{}n{}", (n == 0 && t % 2 == 0) ? "" : ", ", t, n);
    }
    if (t % 2 == 1) islands += "]\n";
  }
  yaml += islands;
  yaml +=
      "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
      "  intra_island: {bandwidth: 200 Gbit/s, latency: 5 us}\n"
      "  inter_island: {bandwidth: 25 Gbit/s, latency: 50 us}\n";
  return cluster::read_cluster_yaml(YamlField::load_string(yaml, "generated"));
}

// A GPT-3 175B-shaped model with `blocks` blocks.
model::Model gpt3_shape(int64_t blocks) {
  auto config = *model::find_catalogue_model("gpt3-175b");
  config.layers = blocks;
  return model::Model(config);
}

// GPT-3 175B-shaped models with `blocks` blocks on `gpus` GPUs.
void BM_SearchScaling(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const model::Model model = gpt3_shape(state.range(1));
  const auto cluster = generated_cluster(gpus);
  const cost::CostModel costs(model, cluster);
  for (auto _ : state) benchmark::DoNotOptimize(search(costs, 1024));
  state.counters["gpus"] = gpus;
  state.counters["blocks"] = static_cast<double>(state.range(1));
}
BENCHMARK(BM_SearchScaling)
    ->Args({16, 96})
    ->Args({64, 96})
    ->Args({256, 96})
    ->Args({1024, 96})
    ->Args({4096, 96})
    ->Args({64, 24})
    ->Args({64, 128})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The whole make_plan for LLaMA 2 70B on `gpus` GPUs, global batch 1024: search,
// re-scoring, replicas and baselines.
void BM_MakePlanScaling(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const auto model = model::load_model("llama2-70b");
  const auto cluster = generated_cluster(gpus);
  const cost::CostModel costs(model, cluster);
  planner::PlanRequest request;
  request.batch = {"llama2-70b", "generated", 1024, 0, planner::micro_batch_sizes(1024)};
  planner::PlanResult result;
  try {
    for (auto _ : state) benchmark::DoNotOptimize(result = planner::make_plan(costs, request));
  } catch (const InputError& error) {
    state.SkipWithError(error.what());
    return;
  }
  state.counters["gpus"] = gpus;
  count_phases(state, result);
}
BENCHMARK(BM_MakePlanScaling)
    ->Arg(64)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The search over pipelines of different composition (replica_search.h) for the same
// models and clusters: every split of the four classes up to 64 GPUs (14 splits), by
// island and by type beyond (2 splits).
void BM_ReplicaScaling(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const model::Model model = gpt3_shape(state.range(1));
  const auto cluster = generated_cluster(gpus);
  const cost::CostModel costs(model, cluster);
  planner::ReplicaOptions options;
  options.batch = {"gpt3-175b", "generated", 1024, 0, {}};
  const auto classes = planner::device_classes(cluster);
  for (auto _ : state) {
    benchmark::DoNotOptimize(planner::search_replicas(costs, classes, options));
  }
  state.counters["gpus"] = gpus;
  state.counters["splits"] = static_cast<double>(planner::class_splits(classes).size());
}
BENCHMARK(BM_ReplicaScaling)
    ->Args({16, 96})
    ->Args({64, 96})
    ->Args({256, 96})
    ->Args({1024, 96})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
