#include "hyperpipe/plan/plan_json.h"

namespace hyperpipe::plan {

nlohmann::json to_json(const Plan& plan) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& stage : plan.stages) {
    stages.push_back({{"layers", {stage.first_layer, stage.end_layer}},
                      {"devices", stage.devices},
                      {"dp", stage.dp},
                      {"tp", stage.tp},
                      {"recompute", model::to_string(stage.recompute)}});
  }
  nlohmann::json schedule{{"kind", schedule::to_string(plan.schedule)}, {"chunks", plan.chunks}};
  if (!plan.warmup.empty()) schedule["warmup"] = plan.warmup;
  nlohmann::json doc{{"format", kPlanFormat},
                     {"model", plan.model},
                     {"cluster", plan.cluster},
                     {"micro_batch_size", plan.micro_batch_size},
                     {"micro_batches", plan.micro_batches},
                     {"schedule", schedule},
                     {"stages", stages}};
  if (plan.seq_len > 0) doc["seq_len"] = plan.seq_len;
  return doc;
}

}  // namespace hyperpipe::plan
