#include "hyperpipe/planner/plan_space.h"

#include <algorithm>

#include "hyperpipe/common/limits.h"

namespace hyperpipe::planner {

bool PlanSpace::allows(schedule::ScheduleKind kind) const {
  return schedules.empty() ||
         std::find(schedules.begin(), schedules.end(), kind) != schedules.end();
}

std::string PlanSpace::schedules_text() const {
  if (schedules.empty()) return "every kind";
  std::string text;
  for (auto kind : schedules)
    text += (text.empty() ? "" : ",") + std::string(schedule::to_string(kind));
  return text;
}

std::string PlanSpace::limits_text() const {
  const PlanSpace defaults;
  std::string text;
  const auto add = [&](const std::string& limit) { text += (text.empty() ? "" : ", ") + limit; };
  if (max_stages != defaults.max_stages) add("--max-stages " + std::to_string(max_stages));
  if (max_tp != defaults.max_tp) add("--max-tp " + std::to_string(max_tp));
  if (same_dp) add("--same-dp");
  if (same_tp) add("--same-tp");
  if (micro_batch != 0) add("--micro-batch " + std::to_string(micro_batch));
  if (dp != 0) add("--dp " + std::to_string(dp));
  if (tp != 0) add("--tp " + std::to_string(tp));
  if (stages != 0) add("--pp " + std::to_string(stages));
  if (recompute) add("--recompute " + std::string(model::to_string(*recompute)));
  if (!schedules.empty()) add("--schedule " + schedules_text());
  return text;
}

bool PlanSpace::one_pipeline() const {
  return same_dp || same_tp || micro_batch != 0 || dp != 0 || tp != 0 || stages != 0;
}

bool within(const plan::Plan& plan, const PlanSpace& space) {
  if (space.one_pipeline() && plan.pipeline_count() != 1) return false;
  if (space.micro_batch && plan.micro_batch_size != space.micro_batch) return false;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const auto& pipeline = plan.pipeline(p);
    if (pipeline.ranks() > space.max_stages || !space.allows(pipeline.schedule)) return false;
    if (space.stages != 0 && pipeline.ranks() != space.stages) return false;
    for (const auto& stage : pipeline.stages) {
      if (stage.tp > space.max_tp) return false;
      if ((space.dp != 0 && stage.dp != space.dp) || (space.tp != 0 && stage.tp != space.tp)) {
        return false;
      }
      if (space.recompute && stage.recompute != *space.recompute) return false;
      if (space.same_dp && stage.dp != pipeline.stages.front().dp) return false;
      if (space.same_tp && stage.tp != pipeline.stages.front().tp) return false;
    }
  }
  return true;
}

std::vector<int64_t> micro_batch_sizes(int64_t global_batch) {
  std::vector<int64_t> sizes;
  for (int64_t d = 1; d * d <= global_batch; ++d) {
    if (global_batch % d != 0) continue;
    sizes.push_back(d);
    if (d * d != global_batch) sizes.push_back(global_batch / d);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(),
                             [&](int64_t b) { return global_batch / b > kMaxMicroBatches; }),
              sizes.end());
  return sizes;
}

}  // namespace hyperpipe::planner
