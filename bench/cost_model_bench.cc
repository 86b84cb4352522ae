// How fast the foundation answers: loading specs, costing layer ranges, and the whole
// `hyperpipe describe` report. The planner will ask range_time millions of times.
#include <benchmark/benchmark.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/report/describe_report.h"

namespace {

using hyperpipe::cluster::load_cluster;
using hyperpipe::cost::CostModel;
using hyperpipe::model::load_model;
using hyperpipe::model::Recompute;

void BM_LoadModelAndCluster(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(load_model("gpt3-2.7b"));
    benchmark::DoNotOptimize(load_cluster("a100-v100-t4"));
  }
}
BENCHMARK(BM_LoadModelAndCluster);

// One stage's compute time: the planner's inner loop.
void BM_RangeTime(benchmark::State& state) {
  const auto model = load_model("gpt3-2.7b");
  const auto cluster = load_cluster("a100-v100-t4");
  const CostModel costs(model, cluster);
  const auto group = hyperpipe::cost::first_devices_of_type(cluster, "V100-16GB", 2, 1);
  const int layers = static_cast<int>(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(costs.range_time(1, 1 + layers, group, 8, 2048, Recompute::none));
  }
  state.SetItemsProcessed(state.iterations() * layers);
}
BENCHMARK(BM_RangeTime)->Arg(1)->Arg(32);

// Everything `hyperpipe describe` computes on the built-in defaults (without printing).
void BM_DescribeReport(benchmark::State& state) {
  for (auto _ : state) {
    const auto model = load_model("gpt3-2.7b");
    const auto cluster = load_cluster("a100-v100-t4");
    const CostModel costs(model, cluster);
    benchmark::DoNotOptimize(hyperpipe::report::describe_report(costs, {}));
  }
}
BENCHMARK(BM_DescribeReport)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
