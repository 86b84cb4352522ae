#include "hyperpipe/planner/described_run.h"

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::planner {

DescribedRun plan_described_run(const RunDescription& description) {
  model::Model model = model::load_model(description.model);
  if (description.dtype) model = model.in_dtype(*description.dtype);
  cluster::Cluster cluster = cluster::load_cluster(description.cluster);
  RunShape shape = description.shape;
  shape.dp =
      data_parallel_size(static_cast<int>(cluster.devices().size()), shape.tp, shape.pp, shape.dp);
  const cost::CostModel costs(model, cluster);
  // Files by absolute path, so the plan in a JSON report works from anywhere.
  plan::Plan plan = plan_of_run(shape, costs, plan::reference_from_anywhere("", description.model),
                                plan::reference_from_anywhere("", description.cluster));
  if (description.dtype) plan.dtype = model.config().dtype;
  return {std::move(plan), std::move(model), std::move(cluster), shape};
}

}  // namespace hyperpipe::planner
