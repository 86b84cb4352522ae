#include "hyperpipe/elastic/plan_adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/statistics.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/sim/plan_simulation.h"

namespace hyperpipe::elastic {

namespace fs = std::filesystem;

void check_adapting_run(bool adapt, bool hand_over_on_request, bool has_profiles,
                        bool has_checkpoint_dir) {
  if (adapt && (!has_profiles || !has_checkpoint_dir)) {
    throw InputError("--adapt", "",
                     "--profiles (the speeds the plan was made for) and --checkpoint-dir "
                     "(where the run goes on from)");
  }
  if (hand_over_on_request && !has_checkpoint_dir) {
    throw InputError("--hand-over-on-request", "",
                     "--checkpoint-dir (the launcher asks in it, and the run goes on from it)");
  }
}

PlanAdapter::PlanAdapter(AdaptInputs inputs, AdaptSettings settings, std::ostream& out)
    : inputs_(std::move(inputs)), settings_(settings), out_(out) {
  const cost::CostModel costs(inputs_.model, inputs_.cluster, {}, &inputs_.profiles);
  const auto simulation = sim::simulate_plan(costs, inputs_.plan);
  // Runtime ranks go pipeline by pipeline, device group by group, each group's devices in
  // plan order; the simulator has one rank per device group.
  for (int p = 0; p < inputs_.plan.pipeline_count(); ++p) {
    const auto& pipeline = inputs_.plan.pipeline(p);
    for (int r = 0; r < pipeline.ranks(); ++r) {
      const double busy =
          simulation.output.ranks.at(static_cast<size_t>(simulation.first_rank.at(p) + r)).busy;
      for (int device : pipeline.stages[r].devices) {
        device_of_rank_.push_back(device);
        expected_.push_back(busy);
      }
    }
  }
  recent_.resize(expected_.size());
  const auto planned = fs::path(inputs_.elastic_dir) / kPlannedSpeedsFile;
  if (inputs_.resumed && fs::exists(planned)) {
    std::ifstream in(planned);
    const auto speeds = nlohmann::json::parse(in, nullptr, false);
    if (speeds.is_object()) {
      for (const auto& [device, speed] : speeds.items()) {
        if (speed.is_number()) accepted_[std::stoi(device)] = speed.get<double>();
      }
    }
  }
}

bool drifted(const std::deque<double>& recent, int steps, double planned_for, double threshold) {
  if (recent.size() < static_cast<size_t>(steps)) return false;
  const bool slower = std::all_of(recent.end() - steps, recent.end(), [&](double speed) {
    return speed < planned_for * (1 - threshold);
  });
  const bool faster = std::all_of(recent.end() - steps, recent.end(), [&](double speed) {
    return speed > planned_for * (1 + threshold);
  });
  return slower || faster;
}

SwitchVerdict switch_verdict(double before, double after, double switch_cost, int64_t steps_left,
                             double min_gain) {
  const double gain = before - after;
  SwitchVerdict verdict;
  verdict.payback_steps = gain > 0 ? switch_cost / gain : INFINITY;
  if (gain < min_gain * before) {
    verdict.why_not = fmt::format("is under --adapt-gain {:.0f}%", 100 * min_gain);
  } else if (!(verdict.payback_steps < static_cast<double>(steps_left))) {
    verdict.why_not = "does not pay for the switch before the run ends";
  } else {
    verdict.pays = true;
  }
  return verdict;
}

bool PlanAdapter::measured(int64_t step, const std::vector<double>& compute, double switch_cost) {
  if (compute.size() != expected_.size()) return false;
  planner::DeviceSpeeds speeds = accepted_;
  bool any_drifted = false;
  std::string why;
  for (size_t rank = 0; rank < compute.size(); ++rank) {
    if (!(compute[rank] > 0)) continue;
    auto& recent = recent_[rank];
    recent.push_back(expected_[rank] / compute[rank]);
    if (recent.size() > static_cast<size_t>(settings_.steps)) recent.pop_front();
    const int device = device_of_rank_[rank];
    const double planned_for = accepted_.count(device) ? accepted_.at(device) : 1.0;
    if (!drifted(recent, settings_.steps, planned_for, settings_.threshold)) continue;
    const double speed = median(std::vector<double>(recent.begin(), recent.end()));
    speeds[device] = speed;
    any_drifted = true;
    why += fmt::format("{}device {} ({}) at {:.2f} of its profile", why.empty() ? "" : ", ", device,
                       inputs_.cluster.device_type(device).name, speed);
  }
  if (!any_drifted) return false;
  out_ << fmt::format("[adapt] over the last {} steps: {}; re-planning at the measured speeds\n",
                      settings_.steps, why)
       << std::flush;
  for (auto& recent : recent_) recent.clear();
  const bool switching = consider(step, speeds, switch_cost);
  accepted_ = speeds;
  return switching;
}

bool PlanAdapter::consider(int64_t step, const planner::DeviceSpeeds& speeds, double switch_cost) {
  std::vector<int> devices = plan::devices_in_rank_order(inputs_.plan);
  std::sort(devices.begin(), devices.end());
  const double before = planner::predicted_iteration(inputs_.plan, inputs_.model, inputs_.cluster,
                                                     &inputs_.profiles, speeds);
  planner::Replanned replanned;
  try {
    replanned = planner::replan(inputs_.plan, inputs_.model, inputs_.cluster, devices,
                                &inputs_.profiles, speeds);
  } catch (const std::exception& error) {
    out_ << fmt::format("[adapt] keeping the plan: no other fits ({})\n", error.what());
    return false;
  }
  // The switch comes after the next step: the steps left after it gain.
  const int64_t steps_left = inputs_.steps - (step + 2);
  const auto verdict =
      switch_verdict(before, replanned.iteration_time, switch_cost, steps_left, settings_.gain);
  out_ << fmt::format(
              "[adapt] re-planned in {}: {}; predicted iteration at these speeds {} (this plan) "
              "→ {}; a switch costs about {} (a save and a start as this run's), paid back after "
              "{} of the "
              "{} steps left\n",
              format_duration(replanned.seconds), plan::format_stages(replanned.plan),
              format_duration(before), format_duration(replanned.iteration_time),
              format_duration(switch_cost),
              std::isfinite(verdict.payback_steps)
                  ? fmt::format("{:.0f}", std::ceil(verdict.payback_steps))
                  : "none",
              steps_left)
       << std::flush;
  if (!verdict.pays) {
    out_ << fmt::format("[adapt] keeping the plan: the gain ({:.1f}%) {}\n",
                        100 * (before - replanned.iteration_time) / before, verdict.why_not)
         << std::flush;
    return false;
  }
  plan::Plan next = replanned.plan;
  next.model = plan::reference_from_anywhere(inputs_.plan_path, inputs_.plan.model);
  next.cluster = inputs_.cluster_option
                     ? plan::reference_from_anywhere("", *inputs_.cluster_option)
                     : plan::reference_from_anywhere(inputs_.plan_path, inputs_.plan.cluster);
  fs::create_directories(inputs_.elastic_dir);
  const std::string path =
      (fs::path(inputs_.elastic_dir) / fmt::format("adapted-after-step-{}.plan.json", step + 2))
          .string();
  nlohmann::json document = plan::to_json(next);
  document["predicted"] = {{"iteration_time_s", replanned.iteration_time}};
  write_file_atomically(path, document.dump(2) + "\n");
  nlohmann::json measured = nlohmann::json::object();
  for (const auto& [device, speed] : speeds) measured[std::to_string(device)] = speed;
  write_file_atomically((fs::path(inputs_.elastic_dir) / kPlannedSpeedsFile).string(),
                        measured.dump(2) + "\n");
  write_file_atomically((fs::path(inputs_.elastic_dir) / kSwitchFile).string(),
                        nlohmann::json{{"format", kSwitchFormat},
                                       {"plan", path},
                                       {"after_step", step + 2},
                                       {"speeds", measured},
                                       {"predicted_iteration_s",
                                        {{"before", before}, {"after", replanned.iteration_time}}},
                                       {"switch_cost_estimate_s", switch_cost}}
                                .dump(2) +
                            "\n");
  out_ << fmt::format("[adapt] switching after the next step's checkpoint to {}\n", path)
       << std::flush;
  return true;
}

}  // namespace hyperpipe::elastic
