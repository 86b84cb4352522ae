#include "hyperpipe/launch/plan_launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/exit_codes.h"
#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/launch/worker_arguments.h"
#include "hyperpipe/sim/memory_verdict.h"

namespace hyperpipe::launch {
namespace {

// The plan's ranks that run here, and how many the run has in all.
std::pair<std::vector<int>, int> ranks_here(const plan::Plan& plan, const PlanLaunch& launch) {
  return {plan::ranks_of_devices(plan, launch.devices_here),
          static_cast<int>(plan::devices_in_rank_order(plan).size())};
}

// The worker's `train` with the plan and the arguments passed on.
std::vector<std::string> train_command(const PlanLaunch& launch) {
  std::vector<std::string> command{launch.worker, "train"};
  append(command, train_flags::kPlan, launch.plan_path);
  command.insert(command.end(), launch.train_arguments.begin(), launch.train_arguments.end());
  return command;
}

}  // namespace

void check_shared_run(const plan::Plan& plan, const PlanLaunch& launch) {
  const auto [ranks, world_size] = ranks_here(plan, launch);
  if (static_cast<int>(ranks.size()) == world_size) return;
  const std::string here = fmt::format("{} device(s) of the plan's", launch.devices_here.size());
  if (given(launch.train_arguments, train_flags::kAdapt) && !launch.elastic) {
    throw InputError("--devices-here", here,
                     "--elastic beside --adapt: a run across hosts switches plans through the "
                     "elastic leader and its agents");
  }
  if (launch.port == 0) {
    throw InputError("--devices-here", here,
                     "a --port, the same for every host's launcher: the run meets at "
                     "--master-addr:--port, where rank 0 listens");
  }
  if (!std::getenv(kJobTokenVariable)) {
    throw InputError("--devices-here", here,
                     fmt::format("{0} exported, the same on every host (e.g. `export {0}=$(openssl "
                                 "rand -hex 16)`): each launcher would otherwise make a secret "
                                 "of its own, and the hosts could not meet",
                                 kJobTokenVariable));
  }
}

LaunchSpec launch_spec(const plan::Plan& plan, const PlanLaunch& launch) {
  LaunchSpec spec;
  std::tie(spec.ranks, spec.world_size) = ranks_here(plan, launch);
  spec.processes = static_cast<int>(spec.ranks.size());
  spec.command = train_command(launch);
  spec.address = launch.address;
  spec.port = launch.port;
  spec.grace = std::chrono::milliseconds(static_cast<int64_t>(launch.grace_seconds * 1000));
  if (prints_json(launch)) spec.raw_stdout_rank = 0;
  return spec;
}

void check_fits(const plan::CheckedPlan& checked, const PlanLaunch& launch) {
  const model::Model model = model_as_run(checked.model, launch.train_arguments);
  std::optional<cost::ProfileDb> profiles;
  if (const auto path = value_of(launch.train_arguments, train_flags::kProfiles)) {
    profiles = cost::ProfileDb::load_for(*path, model.config().name);
  }
  const cost::CostModel costs(model, checked.cluster, {}, profiles ? &*profiles : nullptr);
  const auto over = sim::over_capacity(sim::simulate_plan(costs, checked.plan));
  if (over.empty() || launch.force) return;
  std::vector<std::string> lines;
  for (const auto& device : over) lines.push_back(device.text());
  throw InputError(
      "--plan", launch.plan_path,
      fmt::format("a plan whose predicted peak fits every device: {} (see `hyperpipe simulate "
                  "--plan {}` for every term; --force launches it anyway)",
                  fmt::join(lines, "; "), launch.plan_path));
}

void check_before_launch(const PlanLaunch& launch, std::ostream& err) {
  LaunchSpec check;
  check.command = train_command(launch);
  append(check.command, train_flags::kCheck);
  check.bare = true;         // one process: its error is the launch's
  std::ostringstream quiet;  // its "ready" line: the run's own output follows
  const auto result = launch_processes(check, quiet, err);
  // Its message (above) is the one the user reads; no process of the run has started.
  if (result.exit_code != 0) throw CommandFailed("", result.exit_code);
}

void check_port_free(const LaunchSpec& spec) {
  const bool hosts_store = spec.ranks.front() == 0;  // rank 0 listens for the others
  if (spec.port > 0 && hosts_store && !port_is_free(spec.port)) {
    throw InputError("--port", std::to_string(spec.port),
                     fmt::format("a free port for the rendezvous: {} is in use (try --port {}, "
                                 "or leave --port out to pick a free one)",
                                 spec.port, free_port()));
  }
}

bool prints_json(const PlanLaunch& launch) {
  return value_of(launch.train_arguments, train_flags::kFormat) == "json";
}

std::string options_without(const std::string& help, const std::vector<std::string>& own) {
  std::istringstream lines(help);
  std::string line;
  std::string result;
  bool in_options = false;
  bool keep = false;
  while (std::getline(lines, line)) {
    if (line == "Options:") {
      in_options = true;
      continue;
    }
    if (!in_options) continue;
    if (line.empty()) break;
    if (line.find_first_not_of(' ') == 2 && line[2] == '-') {  // an entry's first line
      std::istringstream names(line.substr(2, line.find(' ', 2) - 2));
      keep = true;
      for (std::string name; std::getline(names, name, ',');) {
        if (name == "-h" || std::find(own.begin(), own.end(), name) != own.end()) keep = false;
      }
    }
    if (keep) result += line + "\n";
  }
  return result;
}

std::string options_passed_on(const std::string& worker, const std::vector<std::string>& own) {
  LaunchSpec help;
  help.command = {worker, "train", "--help"};
  help.bare = true;
  std::ostringstream text;
  std::ostringstream errors;
  if (launch_processes(help, text, errors).exit_code != 0) return "";
  return options_without(text.str(), own);
}

}  // namespace hyperpipe::launch
