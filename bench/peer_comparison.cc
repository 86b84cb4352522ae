// HyperPipe's plan against what others search, on one simulator: the frameworks' own
// splits (uniform, parameters, capability: baselines.h) and the plan spaces of published
// heterogeneity-aware planners (Sailor, Metis, AMP: peer_spaces.h), on the mixed example
// clusters, for GPT-3 2.7B / 13B and LLaMA-2 7B. Prints each one's iteration over ours
// ("1.45" = ours is 1.45× faster), the share of the ideal iteration ours reaches
// (ideal_iteration.h), and the most any plan could gain over the best peer space (that
// space's iteration over the ideal); then the least margin over the best of the peers'
// spaces, and on how many instances no plan at all could reach kTargetMargin. Usage:
// build/bench/peer_comparison [--global-batch N]
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/planner/ideal_iteration.h"
#include "hyperpipe/planner/peer_spaces.h"
#include "hyperpipe/planner/planner.h"

// Issue 16's target: ours at least this much faster than the best of the peers' spaces.
constexpr double kTargetMargin = 1.3;

int main(int argc, char** argv) {
  using namespace hyperpipe;
  int64_t global_batch = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--global-batch") == 0) global_batch = std::atoll(argv[i + 1]);
  }
  const std::vector<std::string> clusters = {"a100-v100-t4", "h100-a100-islands", "three-islands",
                                             "far-island"};
  const std::vector<std::string> models = {"gpt3-2.7b", "gpt3-13b", "llama2-7b"};
  fmt::print("{:<18} {:<10} {:>9}  {:>8} {:>10} {:>10} {:>7} {:>7} {:>7} {:>7} {:>9}\n", "cluster",
             "model", "ours", "uniform", "parameters", "capability", "sailor", "metis", "amp",
             "ideal", "reachable");
  double least_margin = std::numeric_limits<double>::infinity();
  int out_of_reach = 0;
  for (const auto& cluster_name : clusters) {
    for (const auto& model_name : models) {
      const auto model = model::load_model(model_name);
      const auto cluster = cluster::load_cluster(cluster_name);
      const cost::CostModel costs(model, cluster);
      planner::PlanRequest request;
      request.batch = {model_name, cluster_name, global_batch, 0,
                       planner::micro_batch_sizes(global_batch)};
      request.peers = true;
      planner::PlanResult result;
      try {
        result = planner::make_plan(costs, request);
      } catch (const std::exception& error) {
        fmt::print("{:<18} {:<10} no plan fits\n", cluster_name, model_name);
        continue;
      }
      const double ours = result.best.iteration_time();
      const auto ratio = [&](const std::vector<planner::ScoredPlan>& plans,
                             const std::string& label) -> std::string {
        for (const auto& plan : plans) {
          if (plan.label != label) continue;
          if (!plan.fits) return "no fit";
          return fmt::format("{:.2f}", plan.iteration_time() / ours);
        }
        return "-";
      };
      double best_peer = std::numeric_limits<double>::infinity();
      for (const auto& peer : result.peers) {
        if (peer.fits) best_peer = std::min(best_peer, peer.iteration_time());
      }
      if (std::isfinite(best_peer)) least_margin = std::min(least_margin, best_peer / ours);
      const double ideal = planner::ideal_iteration(costs, request.batch);
      fmt::print(
          "{:<18} {:<10} {:>7.0f}ms  {:>8} {:>10} {:>10} {:>7} {:>7} {:>7} {:>6.0f}% {:>8.2f}x\n",
          cluster_name, model_name, 1e3 * ours, ratio(result.baselines, "uniform"),
          ratio(result.baselines, "parameters"), ratio(result.baselines, "capability"),
          ratio(result.peers, "sailor"), ratio(result.peers, "metis"), ratio(result.peers, "amp"),
          100 * ideal / ours, best_peer / ideal);
      if (best_peer / ideal < kTargetMargin) ++out_of_reach;
      std::fflush(stdout);
    }
  }
  fmt::print("\nleast margin over the best of the peers' spaces: {:.3f}x\n", least_margin);
  fmt::print("instances where no plan can be {:.1f}x faster than the best peer space: {}\n",
             kTargetMargin, out_of_reach);
  return 0;
}
