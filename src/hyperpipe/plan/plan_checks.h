// Whether a plan fits the model and cluster it names.
#pragma once

#include <string>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::plan {

// Throws InputError (naming `source`, the plan file) when the plan does not fit: layer
// ranges that do not cover the model's chain, unknown or shared devices, a stage mixing
// GPU types, tensor parallelism across nodes or not dividing the heads, a micro-batch
// smaller than a stage's dp, a sequence longer than the model's positions.
void check_plan(const Plan& plan, const model::Model& model, const cluster::Cluster& cluster,
                const std::string& source);

}  // namespace hyperpipe::plan
