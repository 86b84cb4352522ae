// Planning again for a run whose devices changed: an elastic run that lost devices (or
// got some back) keeps its model, global batch, sequence length, framework and the
// plan-wide settings it trained with, and gets the fastest plan that fits on the devices
// it has now. The plan names devices by their ids in the whole cluster, so a device keeps
// its process slot, GPU and links from one plan to the next.
#pragma once

#include <vector>

#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {

struct Replanned {
  ScoredPlan best;     // on `whole`'s device ids, scored on `whole`
  double seconds = 0;  // the whole search, wall time
};

// The fastest plan of `previous`'s model and batch over `devices` (ids of `whole`), with
// `profiles` where given, else the cost model's estimates. Throws InputError (make_plan's,
// with the memory numbers) when nothing fits on them.
Replanned replan(const plan::Plan& previous, const model::Model& model,
                 const cluster::Cluster& whole, const std::vector<int>& devices,
                 const cost::ProfileDb* profiles);

}  // namespace hyperpipe::planner
