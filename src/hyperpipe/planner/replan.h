// Planning again for a run whose devices changed: an elastic run that lost devices (or
// found some slower than planned) keeps its model, global batch, sequence length,
// framework and the plan-wide settings it trained with, and gets the fastest plan that
// fits on the devices it has now, as fast as they now are. The plan names devices by their
// ids in the whole cluster, so a device keeps its process slot, GPU and links from one
// plan to the next.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::planner {

// Device id (of the whole cluster) → its speed over what its type's profiles (or
// estimates) say, where measured below them: 0.5 computes at half the speed planned.
using DeviceSpeeds = std::map<int, double>;

struct Replanned {
  plan::Plan plan;  // on the whole cluster's device ids
  std::string label;
  double iteration_time = 0;  // predicted, at `speeds`
  bool fits = false;
  double seconds = 0;  // the whole search, wall time
};

// The fastest plan of `previous`'s model and batch over `devices` (ids of `whole`) running
// at `speeds`, with `profiles` where given, else the cost model's estimates. Throws
// InputError (make_plan's, with the memory numbers) when nothing fits on them.
Replanned replan(const plan::Plan& previous, const model::Model& model,
                 const cluster::Cluster& whole, const std::vector<int>& devices,
                 const cost::ProfileDb* profiles, const DeviceSpeeds& speeds = {});

// The simulator's iteration for `plan` (on `whole`'s ids) with its devices at `speeds`.
double predicted_iteration(const plan::Plan& plan, const model::Model& model,
                           const cluster::Cluster& whole, const cost::ProfileDb* profiles,
                           const DeviceSpeeds& speeds = {});

}  // namespace hyperpipe::planner
