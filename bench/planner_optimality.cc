// The planner against the exhaustive judge (planner/exhaustive_search.h) on mid-size
// instances: homogeneous clusters of 8, 32 and 128 GPUs in nodes of 4 and 8, and mixed
// clusters of two and three GPU types across two islands, each for a few model shapes.
// Prints, per instance, the planner's simulated iteration, the best the enumeration found
// and the gap, then the distribution. Usage:
//   build/bench/planner_optimality [--time-limit SECONDS] [--filter TEXT] [--show 1]
//                                  [--log-level debug]
// (--show 1: both plans of an instance with a gap, stage by stage, to see what was missed.)
// An instance whose enumeration hits the time limit is reported as incomplete: its gap is
// then only a lower bound.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/planner/exhaustive_search.h"
#include "hyperpipe/planner/planner.h"

namespace {

using namespace hyperpipe;

struct NodeGroup {
  const char* gpu;
  int nodes;
  int gpus_per_node;
  int island;
};

struct Instance {
  std::string name;
  std::vector<NodeGroup> nodes;
};

struct ModelShape {
  std::string name;
  int blocks;
  int hidden;
};

// Links as in the example clusters: NVLink in a node, InfiniBand in an island, Ethernet
// between islands.
cluster::Cluster make_cluster(const Instance& instance) {
  std::string yaml = "name: " + instance.name + "\nnodes:\n";
  std::vector<std::string> islands(2);
  int n = 0;
  for (const auto& group : instance.nodes) {
    for (int i = 0; i < group.nodes; ++i, ++n) {
      yaml +=
          fmt::format("  - {{name: n{}, gpu: {}, count: {}}}\n", n, group.gpu, group.gpus_per_node);
      islands[group.island] += (islands[group.island].empty() ? "" : ", ") + fmt::format("n{}", n);
    }
  }
  yaml += "islands:\n";
  for (size_t i = 0; i < islands.size(); ++i) {
    if (!islands[i].empty()) yaml += fmt::format("  - {{name: i{}, nodes: [{}]}}\n", i, islands[i]);
  }
  yaml +=
      "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
      "  intra_island: {bandwidth: 200 Gbit/s, latency: 5 us}\n"
      "  inter_island: {bandwidth: 25 Gbit/s, latency: 50 us}\n";
  return cluster::read_cluster_yaml(YamlField::load_string(yaml, instance.name));
}

model::Model make_model(const ModelShape& shape) {
  const std::string yaml = fmt::format(
      "name: {}\nflavour: gpt\nhidden: {}\nlayers: {}\nheads: 16\nvocab: 50257\n"
      "seq_len: 2048\ndtype: fp16\n",
      shape.name, shape.hidden, shape.blocks);
  return model::Model(model::read_model_yaml(YamlField::load_string(yaml, shape.name)));
}

// "4 stages, micro-batch 2, zb-h1: A100-80GB 8×1 [0, 3) none …" for the plans --show prints.
std::string layout(const cluster::Cluster& cluster, const planner::ScoredPlan& scored) {
  const plan::Plan& p = scored.plan;
  std::string text = fmt::format("{} stages, micro-batch {}, {}{}:", p.stages.size(),
                                 p.micro_batch_size, schedule::to_string(p.schedule),
                                 p.chunks > 1 ? fmt::format(" ({} chunks)", p.chunks) : "");
  for (const auto& stage : p.stages) {
    text += fmt::format(" {} {}×{} {} {}", cluster.device_type(stage.devices.front()).name,
                        stage.dp, stage.tp, plan::format_layers(stage.first_layer, stage.end_layer),
                        model::to_string(stage.recompute));
  }
  return text;
}

struct Outcome {
  std::string label;
  double planned = 0;
  double best = 0;
  double gap = 0;  // planned / best − 1
  bool complete = true;
};

}  // namespace

int main(int argc, char** argv) {
  double time_limit = 300;
  std::string filter;
  bool show = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--show") == 0) show = std::atoi(argv[i + 1]) != 0;
    if (std::strcmp(argv[i], "--time-limit") == 0) time_limit = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--filter") == 0) filter = argv[i + 1];
    // --log-level debug: the planner's candidates, as it scores them.
    if (std::strcmp(argv[i], "--log-level") == 0 && !set_log_level(argv[i + 1])) {
      fmt::print(stderr, "planner_optimality: unknown --log-level '{}'\n", argv[i + 1]);
      return 2;
    }
  }
  const std::vector<Instance> instances = {
      {"8xA100 (2 nodes of 4)", {{"A100-80GB", 2, 4, 0}}},
      {"8xA100 (1 node of 8)", {{"A100-80GB", 1, 8, 0}}},
      {"32xA100 (8 nodes of 4)", {{"A100-80GB", 8, 4, 0}}},
      {"32xA100 (4 nodes of 8)", {{"A100-80GB", 4, 8, 0}}},
      {"128xH100 (32 nodes of 4)", {{"H100-SXM", 32, 4, 0}}},
      {"128xH100 (16 nodes of 8)", {{"H100-SXM", 16, 8, 0}}},
      {"8 A100 | 8 V100", {{"A100-40GB", 2, 4, 0}, {"V100-32GB", 2, 4, 1}}},
      {"4 A100 | 8 V100 + 4 T4", {{"A100-40GB", 1, 4, 0}, {"V100-16GB", 1, 8, 1}, {"T4", 1, 4, 1}}},
      {"16 H100 | 16 A100 + 16 V100",
       {{"H100-SXM", 2, 8, 0}, {"A100-80GB", 2, 8, 1}, {"V100-32GB", 2, 8, 1}}},
  };
  const std::vector<ModelShape> models = {{"gpt-8x2048", 8, 2048}, {"gpt-24x1024", 24, 1024}};
  constexpr int64_t kGlobalBatch = 256;

  std::vector<Outcome> outcomes;
  fmt::print("{:<30} {:<12} {:>11} {:>11} {:>8} {:>9} {:>8}\n", "cluster", "model", "planner",
             "exhaustive", "gap", "layouts", "seconds");
  for (const auto& instance : instances) {
    for (const auto& shape : models) {
      const std::string label = instance.name + " / " + shape.name;
      if (!filter.empty() && label.find(filter) == std::string::npos) continue;
      const auto cluster = make_cluster(instance);
      const auto model = make_model(shape);
      const cost::CostModel costs(model, cluster);
      planner::PlanRequest request;
      request.batch = {shape.name, instance.name, kGlobalBatch, 0,
                       planner::micro_batch_sizes(kGlobalBatch)};
      const auto planned = planner::make_plan(costs, request);
      planner::ExhaustiveOptions options;
      options.batch = request.batch;
      options.incumbent = planned.best.iteration_time();
      options.time_limit_s = time_limit;
      const auto judged = planner::exhaustive_search(costs, options);
      Outcome outcome{label, planned.best.iteration_time(), planned.best.iteration_time(), 0,
                      judged.complete};
      if (judged.best) {
        outcome.best = judged.best->iteration_time();
        outcome.gap = outcome.planned / outcome.best - 1;
      }
      fmt::print("{:<30} {:<12} {:>9.1f}ms {:>9.1f}ms {:>7.2f}% {:>9} {:>8.1f}{}\n", instance.name,
                 shape.name, 1e3 * outcome.planned, 1e3 * outcome.best, 100 * outcome.gap,
                 judged.layouts, judged.seconds, judged.complete ? "" : " (incomplete)");
      if (show && judged.best && outcome.gap > 1e-9) {
        fmt::print("  planner:    {}\n  exhaustive: {}\n", layout(cluster, planned.best),
                   layout(cluster, *judged.best));
      }
      std::fflush(stdout);
      outcomes.push_back(outcome);
    }
  }
  int best = 0, within = 0, complete = 0;
  double worst = 0;
  for (const auto& outcome : outcomes) {
    best += outcome.gap <= 1e-9;
    within += outcome.gap <= 0.01;
    complete += outcome.complete;
    worst = std::max(worst, outcome.gap);
  }
  fmt::print(
      "\n{} instances ({} enumerated completely): the planner's plan is the best in {}, within "
      "1% in {}; worst gap {:.2f}%\n",
      outcomes.size(), complete, best, within, 100 * worst);
  return within == static_cast<int>(outcomes.size()) ? 0 : 1;
}
