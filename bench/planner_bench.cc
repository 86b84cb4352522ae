// Planner speed: the stage-construction search (all micro-batch sizes, all stage orders)
// for GPT-3 2.7B on the A100 + V100 + T4 example (issue target: under 50 ms), and how the
// search grows with GPUs and layers on generated clusters of four GPU types in two
// islands.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "hyperpipe/cluster/cluster_loader.h"
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
