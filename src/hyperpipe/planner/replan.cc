#include "hyperpipe/planner/replan.h"

#include <chrono>

#include "hyperpipe/cluster/device_speeds.h"
#include "hyperpipe/cluster/device_subset.h"
#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/planner/planner.h"
#include "hyperpipe/planner/scored_plan.h"
#include "hyperpipe/sim/costs_as_planned.h"

namespace hyperpipe::planner {
namespace {

// The profiles with every slowed type's entries: its original's times ÷ its factor.
cost::ProfileDb with_slowed_types(const cost::ProfileDb& profiles,
                                  const std::map<std::string, cluster::SlowedType>& types) {
  cost::ProfileDb result = profiles;
  for (const auto& entry : profiles.entries()) {
    for (const auto& [name, slowed] : types) {
      if (!cluster::same_gpu_name(entry.key.device, slowed.original)) continue;
      cost::ProfileEntry copy = entry;
      copy.key.device = name;
      auto& times = copy.times;
      for (double* seconds : {&times.forward, &times.backward_input, &times.backward_weight}) {
        *seconds /= slowed.factor;
      }
      if (times.optimizer) *times.optimizer /= slowed.factor;
      if (times.backward) *times.backward /= slowed.factor;
      result.add(copy);
    }
  }
  return result;
}

// A cluster at `speeds`, with the profiles for it, and the way back to `whole`'s ids.
struct AtSpeeds {
  cluster::SlowedCluster slowed;
  cost::ProfileDb profiles;
  std::vector<int> to_whole;  // to_whole[id in slowed.cluster]: its id in the whole
};

AtSpeeds at_speeds(const cluster::Cluster& whole, const std::vector<int>& devices,
                   const cost::ProfileDb* profiles, const DeviceSpeeds& speeds) {
  const cluster::DeviceSubset subset = cluster::keep_devices(whole, devices);
  std::map<int, double> factors;
  for (size_t id = 0; id < subset.original.size(); ++id) {
    const auto found = speeds.find(subset.original[id]);
    if (found != speeds.end() && found->second != 1) factors[static_cast<int>(id)] = found->second;
  }
  AtSpeeds result{cluster::slow_devices(subset.cluster, factors), {}, {}};
  if (profiles) result.profiles = with_slowed_types(*profiles, result.slowed.types);
  for (const int id : result.slowed.original) {
    result.to_whole.push_back(subset.original.at(static_cast<size_t>(id)));
  }
  return result;
}

// The plan with each device id replaced by `map`'s.
plan::Plan renumbered(plan::Plan plan, const std::vector<int>& map) {
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    for (auto& stage : plan.pipeline(p).stages) {
      for (int& device : stage.devices) device = map.at(static_cast<size_t>(device));
    }
  }
  return plan;
}

// The inverse of a renumbering onto `whole_size` ids (-1 where none maps).
std::vector<int> inverse(const std::vector<int>& map, size_t whole_size) {
  std::vector<int> result(whole_size, -1);
  for (size_t id = 0; id < map.size(); ++id)
    result.at(static_cast<size_t>(map[id])) = static_cast<int>(id);
  return result;
}

}  // namespace

Replanned replan(const plan::Plan& previous, const model::Model& model,
                 const cluster::Cluster& whole, const std::vector<int>& devices,
                 const cost::ProfileDb* profiles, const DeviceSpeeds& speeds) {
  const auto began = std::chrono::steady_clock::now();
  const AtSpeeds here = at_speeds(whole, devices, profiles, speeds);
  const cost::CostModel costs(model, here.slowed.cluster, sim::costs_as_planned(previous),
                              profiles ? &here.profiles : nullptr);
  PlanRequest request;
  const int64_t global_batch = previous.global_batch();
  request.batch = {previous.model, previous.cluster, global_batch, previous.seq_len,
                   micro_batch_sizes(global_batch)};
  restrict_to_framework(previous.runtime, request);
  const PlanResult result = make_plan(costs, request);

  Replanned replanned;
  replanned.plan = renumbered(result.best.plan, here.to_whole);
  replanned.plan.sequence_parallel = previous.sequence_parallel;
  replanned.plan.gradient_reduce_dtype = previous.gradient_reduce_dtype;
  replanned.plan.memory_margin = previous.memory_margin;
  replanned.plan.shard_optimizer = false;
  for (int p = 0; p < replanned.plan.pipeline_count(); ++p) {
    for (const auto& stage : replanned.plan.pipeline(p).stages) {
      if (stage.dp > 1) replanned.plan.shard_optimizer = previous.shard_optimizer;
    }
  }
  replanned.label = result.best.label;
  replanned.fits = result.best.fits;
  replanned.iteration_time = predicted_iteration(replanned.plan, model, whole, profiles, speeds);
  replanned.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return replanned;
}

double predicted_iteration(const plan::Plan& plan, const model::Model& model,
                           const cluster::Cluster& whole, const cost::ProfileDb* profiles,
                           const DeviceSpeeds& speeds) {
  std::vector<int> every(whole.devices().size());
  for (size_t id = 0; id < every.size(); ++id) every[id] = static_cast<int>(id);
  const AtSpeeds here = at_speeds(whole, every, profiles, speeds);
  const cost::CostModel costs(model, here.slowed.cluster, sim::costs_as_planned(plan),
                              profiles ? &here.profiles : nullptr);
  return score_plan(costs, renumbered(plan, inverse(here.to_whole, every.size())), "")
      .iteration_time();
}

}  // namespace hyperpipe::planner
