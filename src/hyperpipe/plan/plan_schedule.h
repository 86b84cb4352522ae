// The one place a plan's pipeline becomes the op lists its device groups run: its
// schedule, the transfers between stages, and the iteration's end. The simulator and the
// runtime both call it, so what is predicted is what runs.
#pragma once

#include "hyperpipe/plan/plan.h"
#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::plan {

// Pipeline p's complete op lists (communication and epilogue included). `tied_embeddings`:
// the model's head shares the embedding's matrix (model::TransformerConfig).
schedule::Schedule schedule_for(const Plan& plan, int pipeline, bool tied_embeddings);

}  // namespace hyperpipe::plan
