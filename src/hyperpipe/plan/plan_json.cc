#include "hyperpipe/plan/plan_json.h"

namespace hyperpipe::plan {
namespace {

// The fields of one pipeline, added to `doc`.
void add_pipeline(const Pipeline& plan, nlohmann::json& doc) {
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
  doc["micro_batch_size"] = plan.micro_batch_size;
  doc["micro_batches"] = plan.micro_batches;
  doc["schedule"] = schedule;
  doc["stages"] = stages;
}

}  // namespace

nlohmann::json to_json(const Plan& plan) {
  nlohmann::json doc{{"format", kPlanFormat}, {"model", plan.model}, {"cluster", plan.cluster}};
  if (plan.seq_len > 0) doc["seq_len"] = plan.seq_len;
  if (plan.overlap_allreduce) doc["overlap_allreduce"] = true;
  if (plan.sequence_parallel) doc["sequence_parallel"] = true;
  if (plan.runtime != Framework::hyperpipe) doc["runtime"] = std::string(to_string(plan.runtime));
  if (plan.shard_optimizer) doc["shard_optimizer"] = true;
  if (plan.memory_margin) doc["memory_margin"] = *plan.memory_margin;
  if (plan.dtype) doc["dtype"] = std::string(model::to_string(*plan.dtype));
  if (plan.gradient_reduce_dtype != model::DType::fp32) {
    doc["gradient_reduce_dtype"] = std::string(model::to_string(plan.gradient_reduce_dtype));
  }
  add_pipeline(plan, doc);
  if (!plan.replicas.empty()) {
    nlohmann::json replicas = nlohmann::json::array();
    for (const auto& replica : plan.replicas) add_pipeline(replica, replicas.emplace_back());
    doc["replicas"] = replicas;
  }
  return doc;
}

}  // namespace hyperpipe::plan
