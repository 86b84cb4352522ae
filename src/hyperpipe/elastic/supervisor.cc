#include "hyperpipe/elastic/supervisor.h"

#include <fmt/format.h>

#include <algorithm>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/exit_codes.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/elastic/hosts.h"

namespace hyperpipe::elastic {

Supervisor::Supervisor(SupervisedRun run, SupervisorRules rules, std::ostream& log)
    : run_(std::move(run)), rules_(rules), log_(log), plan_(run_.plan) {
  const auto devices = plan::devices_in_rank_order(plan_);
  for (size_t rank = 0; rank < devices.size(); ++rank) {
    local_rank_of_[devices[rank]] = static_cast<int>(rank);
  }
  available_ = devices;
  std::sort(available_.begin(), available_.end());
  if (static_cast<int>(available_.size()) < rules_.min_devices) {
    throw InputError("--min-devices", std::to_string(rules_.min_devices),
                     fmt::format("at most the plan's {} devices", available_.size()));
  }
}

void Supervisor::log(const std::string& text) const {
  log_ << "[elastic] " << text << '\n' << std::flush;
}

void Supervisor::start_with(std::vector<int> devices) {
  available_ = std::move(devices);
  std::sort(available_.begin(), available_.end());
}

std::vector<int> Supervisor::missing() const {
  std::vector<int> devices;
  for (int device : plan::devices_in_rank_order(plan_)) {
    if (!std::binary_search(available_.begin(), available_.end(), device)) {
      devices.push_back(device);
    }
  }
  return devices;
}

PlanChange Supervisor::lose(const std::vector<int>& devices, const std::string& what,
                            const std::string& how, int exit_code) {
  if (++losses_ > rules_.max_restarts) {
    throw CommandFailed(fmt::format("{} failed ({}) and the {} --max-restarts allows are used up; "
                                    "the run stopped at its last checkpoint",
                                    what, how, counted(rules_.max_restarts, "restart")),
                        exit_code);
  }
  for (int device : devices) {
    available_.erase(std::remove(available_.begin(), available_.end(), device), available_.end());
  }
  log(fmt::format("{} was lost ({}); {} left: {}", what, how, counted(available_.size(), "device"),
                  plan::format_devices(available_)));
  if (static_cast<int>(available_.size()) < rules_.min_devices) {
    throw CommandFailed(fmt::format("{} left, fewer than --min-devices {}; the run stopped at its "
                                    "last checkpoint",
                                    counted(available_.size(), "device"), rules_.min_devices),
                        exit_code);
  }
  try {
    return adopt(plan_available());
  } catch (const InputError& error) {
    throw InputError("--elastic",
                     fmt::format("after losing {} {}", noun_for(devices.size(), "device"),
                                 plan::format_devices(devices)),
                     fmt::format("a plan that fits the {} left ({}); none does: {}",
                                 counted(available_.size(), "device"),
                                 plan::format_devices(available_), error.expected()));
  }
}

PlanChange Supervisor::go_on_without_missing(double waited_seconds) {
  const std::string absent = plan::format_devices(missing());
  if (static_cast<int>(available_.size()) < rules_.min_devices) {
    throw CommandFailed(
        fmt::format("no agent offered device(s) {} in {} s (--host-wait), and the {} device(s) "
                    "there are fewer than --min-devices {}",
                    absent, waited_seconds, available_.size(), rules_.min_devices),
        kExitInternalError);
  }
  log(fmt::format("no agent offered device(s) {} in {} s: planning without them", absent,
                  waited_seconds));
  try {
    return adopt(plan_available());
  } catch (const InputError& error) {
    throw InputError(
        "--elastic", fmt::format("without device(s) {}", absent),
        fmt::format("a plan that fits the {} device(s) there ({}); none does: {}",
                    available_.size(), plan::format_devices(available_), error.expected()));
  }
}

Offered Supervisor::offer(int device) {
  if (const auto refusal = join_refusal(run_.cluster, available_, device)) {
    log(fmt::format("device {} offered: refused: {}", device, *refusal));
    return {{false, *refusal}, std::nullopt};
  }
  available_.insert(std::upper_bound(available_.begin(), available_.end(), device), device);
  if (!local_rank_of_.count(device)) {
    const int slot = static_cast<int>(local_rank_of_.size());
    local_rank_of_[device] = slot;
  }
  if (!started_) return {{true, "in the run from its start"}, std::nullopt};
  joined_.push_back(device);
  Offered offered{{true, ""}, std::nullopt};
  const double now = predicted_iteration(plan_);
  try {
    const auto with_it = plan_available();
    if (with_it.iteration_time < now * (1 - rules_.join_gain)) {
      offered.hand_over = fmt::format(
          "device {} joined: a plan with it is predicted to take {} an iteration (now {})", device,
          format_duration(with_it.iteration_time), format_duration(now));
      offered.answer.message = fmt::format(
          "the run plans again with it after its next checkpoint{} (predicted iteration "
          "{}, now {})",
          rules_.checkpoint_every ? fmt::format(" (every {} steps)", *rules_.checkpoint_every)
                                  : " (none before its end: no --checkpoint-every)",
          format_duration(with_it.iteration_time), format_duration(now));
    } else {
      offered.answer.message = fmt::format(
          "kept as a spare: a plan with it is predicted to take {} an iteration, now {}, "
          "less than --adapt-gain {:.0f}% faster; the run plans with it after a loss",
          format_duration(with_it.iteration_time), format_duration(now), rules_.join_gain * 100);
    }
  } catch (const InputError& error) {
    offered.answer.message =
        fmt::format("kept as a spare: no plan of the devices there fits ({})", error.expected());
  }
  log(fmt::format("device {} ({}) offered: {}", device, run_.cluster.device_type(device).name,
                  offered.answer.message));
  return offered;
}

void Supervisor::withdraw(const std::vector<int>& devices) {
  for (int device : devices) {
    available_.erase(std::remove(available_.begin(), available_.end(), device), available_.end());
    joined_.erase(std::remove(joined_.begin(), joined_.end(), device), joined_.end());
  }
}

PlanChange Supervisor::take_joined() {
  return adopt(plan_available());
}

void Supervisor::switch_to(plan::Plan plan) {
  plan_ = std::move(plan);
}

double Supervisor::predicted_iteration(const plan::Plan& plan) const {
  return planner::predicted_iteration(plan, run_.model, run_.cluster,
                                      run_.profiles ? &*run_.profiles : nullptr);
}

planner::Replanned Supervisor::plan_available() const {
  return planner::replan(plan_, run_.model, run_.cluster, available_,
                         run_.profiles ? &*run_.profiles : nullptr);
}

PlanChange Supervisor::adopt(planner::Replanned replanned) {
  PlanChange change{std::move(replanned), predicted_iteration(plan_)};
  plan_ = change.replanned.plan;
  // The model the first plan names, and the cluster the run is on.
  plan_.model = run_.plan.model;
  plan_.cluster = run_.plan.cluster;
  change.replanned.plan = plan_;
  joined_.clear();  // every device there is in this plan's search
  return change;
}

std::optional<std::string> join_route_refusal(int device, bool across_hosts,
                                              const std::optional<std::string>& host) {
  if (!across_hosts || host == std::string(kLeaderName)) return std::nullopt;
  if (host) return fmt::format("device {} is on host {}, whose agent offers it", device, *host);
  return fmt::format(
      "device {} is on no host of the run: start `hyperpipe agent --devices {}` on its host",
      device, device);
}

}  // namespace hyperpipe::elastic
