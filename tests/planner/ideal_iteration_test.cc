#include "hyperpipe/planner/ideal_iteration.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/planner/planner.h"

namespace hyperpipe::planner {
namespace {

// Nodes of 8 GPUs of the given types, one island, one set of links.
cluster::Cluster nodes_of(const std::vector<std::string>& gpus) {
  std::string yaml = "name: ideal\nnodes:\n";
  for (size_t n = 0; n < gpus.size(); ++n) {
    yaml += fmt::format("  - {{name: n{}, gpu: {}, count: 8}}\n", n, gpus[n]);
  }
  yaml +=
      "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
      "  intra_island: {bandwidth: 100 Gbit/s, latency: 5 us}\n"
      "  inter_island: {bandwidth: 10 Gbit/s, latency: 50 us}\n";
  return cluster::read_cluster_yaml(YamlField::load_string(yaml, "ideal"));
}

BatchSettings batch_of(int64_t global_batch) {
  return {"gpt3-2.7b", "ideal", global_batch, 0, micro_batch_sizes(global_batch)};
}

double ideal_on(const model::Model& model, const std::vector<std::string>& gpus,
                int64_t global_batch) {
  const auto cluster = nodes_of(gpus);
  const cost::CostModel costs(model, cluster);
  return ideal_iteration(costs, batch_of(global_batch));
}

// Devices' rates add: twice the nodes, half the time; an A100 node beside a V100 node
// computes at the sum of their rates.
TEST(IdealIteration, DevicesRatesAdd) {
  const auto model = model::load_model("gpt3-2.7b");
  const double a100 = ideal_on(model, {"A100-80GB"}, 64);
  const double v100 = ideal_on(model, {"V100-32GB"}, 64);
  EXPECT_GT(v100, a100);
  EXPECT_NEAR(ideal_on(model, {"A100-80GB", "A100-80GB"}, 64), a100 / 2, 1e-9 * a100);
  EXPECT_NEAR(ideal_on(model, {"A100-80GB", "V100-32GB"}, 64), 1 / (1 / a100 + 1 / v100),
              1e-9 * a100);
}

// No device computes faster than its peak: the whole iteration's FLOPs over the cluster's
// summed peak is below the ideal, and not by much (the matmuls dominate a GPT block).
TEST(IdealIteration, NeverBelowThePeakFlopsBound) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto cluster = nodes_of({"A100-80GB", "V100-32GB", "T4"});
  const cost::CostModel costs(model, cluster);
  const int64_t global_batch = 32;
  double peak = 0;
  for (const auto& device : cluster.devices()) {
    const auto& type = cluster.device_type(device.id);
    peak += std::max(type.peak_flops(model.config().dtype, true),
                     type.peak_flops(model.config().dtype, false));
  }
  const double flops =
      model.iteration_flops(global_batch, model.config().seq_len, model::Recompute::none);
  const double ideal = ideal_iteration(costs, batch_of(global_batch));
  EXPECT_GE(ideal, flops / peak);
  EXPECT_LE(ideal, 4 * flops / peak) << "every device below a quarter of its peak";
}

// What it promises: no plan the planner, a framework or a peer's space finds beats it.
TEST(IdealIteration, NoPlanBeatsIt) {
  for (const auto& [model_name, cluster_name] :
       std::vector<std::pair<std::string, std::string>>{{"gpt3-2.7b", "a100-v100-t4"},
                                                        {"gpt3-2.7b", "far-island"},
                                                        {"llama2-7b", "h100-a100-islands"}}) {
    const auto model = model::load_model(model_name);
    const auto cluster = cluster::load_cluster(cluster_name);
    const cost::CostModel costs(model, cluster);
    PlanRequest request;
    request.batch = {model_name, cluster_name, 64, 0, micro_batch_sizes(64)};
    request.peers = true;
    const PlanResult result = make_plan(costs, request);
    const double ideal = ideal_iteration(costs, request.batch);
    EXPECT_GT(ideal, 0);
    EXPECT_LE(ideal, result.best.iteration_time()) << cluster_name;
    for (const auto* pool : {&result.baselines, &result.peers, &result.per_order}) {
      for (const auto& plan : *pool) {
        EXPECT_LE(ideal, plan.iteration_time()) << cluster_name << " " << plan.label;
      }
    }
  }
}

// The least per-sequence time of a type is that of its best share: more sequences per
// device fill its units better, so the most a plan can give one device (the global batch)
// is no slower per sequence than one.
TEST(IdealIteration, PerSequenceTimeIsTheLeastOverShares) {
  const auto model = model::load_model("gpt3-2.7b");
  const auto cluster = nodes_of({"A100-80GB"});
  const cost::CostModel costs(model, cluster);
  const auto group = cost::first_devices_of_type(cluster, "A100-80GB", 1, 1);
  const double one = costs
                         .range_time(0, model.num_layers(), group, 1, model.config().seq_len,
                                     model::Recompute::none)
                         .total();
  const double seconds = device_seconds_per_sequence(costs, batch_of(16), "A100-80GB");
  EXPECT_LE(seconds, one);
  EXPECT_GT(seconds, 0);
  EXPECT_NEAR(ideal_iteration(costs, batch_of(16)), 16 * seconds / 8, 1e-9 * seconds);
}

}  // namespace
}  // namespace hyperpipe::planner
