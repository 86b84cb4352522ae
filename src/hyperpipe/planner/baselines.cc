#include "hyperpipe/planner/baselines.h"

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/common/limits.h"
#include "hyperpipe/planner/layer_split.h"

namespace hyperpipe::planner {
namespace {

constexpr const char* kNames[] = {"uniform", "parameters", "capability"};

std::vector<int> layer_ends(const cost::CostModel& costs, Baseline baseline,
                            const std::vector<std::vector<int>>& groups) {
  const auto& model = costs.model();
  const int layers = model.num_layers();
  const int stages = static_cast<int>(groups.size());
  switch (baseline) {
    case Baseline::uniform:
      return uniform_split(layers, stages);
    case Baseline::parameters: {
      std::vector<double> params;
      for (const auto& layer : model.layers())
        params.push_back(static_cast<double>(layer.params()));
      return balanced_split(params, stages);
    }
    case Baseline::capability: {
      std::vector<double> shares;
      for (const auto& group : groups) {
        const auto& type = costs.cluster().device_type(group.front());
        shares.push_back(type.peak_flops(model.config().dtype, model.config().tf32) *
                         static_cast<double>(group.size()));
      }
      return proportional_split(layers, shares);
    }
  }
  return {};
}

// Equal groups of consecutive devices, each of one GPU type; empty if they would mix.
std::vector<std::vector<int>> equal_groups(const cluster::Cluster& cluster, int stages) {
  const int devices = static_cast<int>(cluster.devices().size());
  const int size = devices / stages;
  std::vector<std::vector<int>> groups(stages);
  for (int s = 0; s < stages; ++s) {
    const cluster::GpuType& first = cluster.device_type(s * size);
    for (int d = s * size; d < (s + 1) * size; ++d) {
      // One type entry is one type (the spelling-blind comparison builds strings: only
      // where the entries differ).
      const cluster::GpuType& type = cluster.device_type(d);
      if (&type != &first && !cluster::same_gpu_name(type.name, first.name)) return {};
      groups[s].push_back(d);
    }
  }
  return groups;
}

}  // namespace

std::string_view to_string(Baseline baseline) {
  return kNames[static_cast<int>(baseline)];
}

std::optional<Baseline> parse_baseline(std::string_view name) {
  for (int b = 0; b < 3; ++b) {
    if (name == kNames[b]) return static_cast<Baseline>(b);
  }
  return std::nullopt;
}

std::vector<std::string> baseline_names() {
  return {kNames[0], kNames[1], kNames[2]};
}

std::optional<ScoredPlan> best_baseline(const cost::CostModel& costs, const BatchSettings& batch,
                                        Baseline baseline) {
  const auto& cluster = costs.cluster();
  const int devices = static_cast<int>(cluster.devices().size());
  const int blocks = costs.model().num_layers() - 2;
  std::optional<ScoredPlan> best;
  for (int stages = 1; stages <= std::min(devices, blocks); ++stages) {
    if (devices % stages != 0) continue;
    const auto groups = equal_groups(cluster, stages);
    if (groups.empty()) continue;
    const int group_size = devices / stages;
    const auto ends = layer_ends(costs, baseline, groups);
    for (int64_t b : batch.micro_batch_sizes) {
      if (b < group_size) continue;  // every data-parallel rank needs a sequence
      for (model::Recompute recompute :
           {model::Recompute::none, model::Recompute::selective, model::Recompute::full}) {
        plan::Plan plan = batch.new_plan();
        plan.micro_batch_size = b;
        plan.micro_batches = static_cast<int>(batch.global_batch / b);
        for (int s = 0; s < stages; ++s) {
          plan.stages.push_back(
              {s == 0 ? 0 : ends[s - 1], ends[s], groups[s], group_size, 1, recompute});
        }
        if (!simulatable(plan)) continue;
        if (best) {
          // More recomputation only costs time: once the lower bound cannot beat the
          // fastest that fits, neither can the layouts that recompute more.
          const bool cannot_be_faster =
              iteration_lower_bound(costs, plan) >= best->iteration_time();
          if (best->fits && cannot_be_faster) break;
          // One that overflows wins only where nothing fits yet and it is faster.
          if ((best->fits || cannot_be_faster) && cannot_fit(costs, plan)) continue;
        }
        ScoredPlan scored = score_plan(costs, plan, std::string(to_string(baseline)));
        const bool fits = scored.fits;
        if (!best || preferred(scored, *best)) best = std::move(scored);
        if (fits) break;  // more recomputation only costs time
      }
    }
  }
  return best;
}

}  // namespace hyperpipe::planner
