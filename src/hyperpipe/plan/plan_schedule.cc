#include "hyperpipe/plan/plan_schedule.h"

#include <utility>

#include "hyperpipe/schedule/epilogue.h"
#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/schedule/passes.h"

namespace hyperpipe::plan {

schedule::Schedule schedule_for(const Plan& plan, int pipeline, bool tied_embeddings) {
  const Pipeline& p = plan.pipeline(pipeline);
  auto compute =
      schedule::make_schedule(p.schedule, p.ranks(), p.micro_batches, p.chunks, p.warmup);
  schedule::EpilogueOptions epilogue;
  epilogue.overlap_allreduce = plan.overlap_allreduce;
  epilogue.tied_embeddings = tied_embeddings;
  epilogue.replicas = plan.pipeline_count() > 1;
  return schedule::add_epilogue(schedule::insert_communication(std::move(compute)), epilogue);
}

}  // namespace hyperpipe::plan
