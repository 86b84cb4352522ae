#include "hyperpipe/elastic/supervisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "hyperpipe/common/epoch_time.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/exit_codes.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/elastic/host_rounds.h"
#include "hyperpipe/elastic/joins.h"
#include "hyperpipe/elastic/plan_adapter.h"
#include "hyperpipe/launch/worker_arguments.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/planner/replan.h"

namespace hyperpipe::elastic {
namespace {

namespace fs = std::filesystem;
using launch::has_flag;
using launch::model_as_run;
using launch::option_value;
using launch::without_option;
using nlohmann::json;
using WallClock = std::chrono::system_clock;

// How often a leader looks for agents while it waits for the plan's devices.
constexpr auto kHostPoll = std::chrono::milliseconds(100);

// One recovery's timings, from the launcher's clock and the new run's start-up record.
struct Recovery {
  json record;
  std::string startup_path;
  bool finished = false;  // the new run's first step is in the record
};

// Fills in the start-up half of `recovery` from its record, if the new run wrote one (it
// does after its first step), and says what the recovery took; whether it could.
bool finish_recovery(Recovery& recovery, std::ostream& err) {
  std::ifstream in(recovery.startup_path);
  if (!in) return false;
  const json startup = json::parse(in, nullptr, false);
  if (startup.is_discarded() || !startup.contains("first_step_done")) return false;
  recovery.finished = true;
  json& times = recovery.record["times"];
  for (const char* milestone : {"joined", "layers_built", "checkpoint_loaded", "first_step_done"}) {
    if (startup.contains(milestone)) times[milestone] = startup[milestone];
  }
  recovery.record["steps_done"] = startup.value("steps_done", int64_t{0});
  const auto between = [&](const char* from, const char* to) {
    return times.contains(from) && times.contains(to)
               ? times[to].get<double>() - times[from].get<double>()
               : 0.0;
  };
  json seconds{{"stopping", between("failure_seen", "others_stopped")},
               {"replan", between("others_stopped", "replanned")},
               {"start_and_join", between("relaunched", "joined")},
               {"build", between("joined", "layers_built")},
               {"checkpoint_load", between("layers_built", "checkpoint_loaded")},
               {"first_step", between("checkpoint_loaded", "first_step_done")},
               {"total", between("failure_seen", "first_step_done")}};
  recovery.record["seconds"] = seconds;
  const std::string kind = recovery.record["kind"];
  const bool loss = kind == "loss";
  const std::string stop_and_plan =
      loss ? fmt::format("the others stopped in {}, re-planned in {}, ",
                         format_duration(seconds["stopping"]), format_duration(seconds["replan"]))
           : "";
  err << fmt::format(
             "[elastic] {} {}: {} from {} to the first step on the new plan ({}processes "
             "started and joined in {}, layers built in {}, checkpoint of step {} loaded in {}, "
             "first step {})\n",
             loss ? "recovery" : kind, recovery.record["restart"].get<int>(),
             format_duration(seconds["total"]),
             loss ? "the loss seen" : "the old plan's processes ending", stop_and_plan,
             format_duration(seconds["start_and_join"]), format_duration(seconds["build"]),
             recovery.record["steps_done"].get<int64_t>(),
             format_duration(seconds["checkpoint_load"]), format_duration(seconds["first_step"]))
      << std::flush;
  return true;
}

// An option's number, as `train` reads it (it refuses what is not one before any step).
double number(const std::string& text) {
  try {
    return std::stod(text);
  } catch (const std::exception&) {
    return 0;
  }
}

class ElasticRun {
 public:
  ElasticRun(const std::string& plan_path, const std::vector<std::string>& extras,
             const ElasticSettings& settings, std::ostream& out, std::ostream& err)
      : checked_(plan::load_checked_plan(plan_path, option_value(extras, "--cluster"))),
        model_(model_as_run(checked_.model, extras)),
        extras_(extras),
        settings_(settings),
        out_(out),
        err_(err) {
    const auto checkpoint_dir = option_value(extras, "--checkpoint-dir");
    if (!checkpoint_dir) {
      throw InputError("--elastic", "",
                       "a --checkpoint-dir: an elastic run continues from its last checkpoint");
    }
    if (!option_value(extras, "--checkpoint-every")) {
      log_line(
          "no --checkpoint-every: a restart goes back to the start (checkpoints are written "
          "only at the end)");
    }
    elastic_dir_ = (fs::path(*checkpoint_dir) / kElasticDirectory).string();
    fs::create_directories(elastic_dir_);
    // Requests and hand-overs are for a launcher that is running: none is for this one yet.
    clear_joins(elastic_dir_);
    clear_handover(elastic_dir_);
    if (const auto gain = option_value(extras, "--adapt-gain")) join_gain_ = number(*gain);
    if (const auto every = option_value(extras, "--checkpoint-every")) {
      checkpoint_every_ = static_cast<int64_t>(number(*every));
    }
    // A new run must not take an earlier one's pending switch or measured speeds for its own.
    if (!has_flag(extras, "--resume")) {
      for (const char* stale : {kSwitchFile, kPlannedSpeedsFile}) {
        fs::remove(fs::path(elastic_dir_) / stale);
      }
    }
    if (const auto profiles = option_value(extras, "--profiles")) {
      profiles_ = cost::ProfileDb::load_for(*profiles, checked_.model.config().name);
    }
    plan_ = checked_.plan;
    plan_path_ = plan_path;
    model_reference_ = plan::reference_from_anywhere(plan_path, plan_.model);
    const auto cluster = option_value(extras, "--cluster");
    cluster_reference_ = cluster ? plan::reference_from_anywhere("", *cluster)
                                 : plan::reference_from_anywhere(plan_path, plan_.cluster);
    // Each device keeps the process slot, and so the GPU (LOCAL_RANK), it first had.
    const auto devices = plan::devices_in_rank_order(plan_);
    for (size_t rank = 0; rank < devices.size(); ++rank) {
      local_rank_of_[devices[rank]] = static_cast<int>(rank);
    }
    available_ = devices;
    std::sort(available_.begin(), available_.end());
    if (static_cast<int>(available_.size()) < settings.min_devices) {
      throw InputError("--min-devices", std::to_string(settings.min_devices),
                       fmt::format("at most the plan's {} devices", available_.size()));
    }
    if (!settings.devices_here.empty()) {
      // Across hosts: the others' devices are the run's once their agents offer them.
      available_ = settings.devices_here;
      std::sort(available_.begin(), available_.end());
      hosts_.emplace(elastic_dir_, settings.devices_here, settings.address, settings.port,
                     settings.heartbeat_timeout, out_, err_);
    }
  }

  // Tells the agents, if any, that the run is over: finished, or ended for `reason`.
  void end(bool finished, const std::string& reason) {
    if (hosts_) hosts_->end(finished ? RoundState::kFinished : RoundState::kEnded, reason);
  }

  void run(launch::LaunchSpec spec) {
    if (hosts_) wait_for_hosts();
    started_ = true;
    for (int restart = 0;; ++restart) {
      const auto devices = plan::devices_in_rank_order(plan_);
      if (hosts_ && lose_hostless_devices(devices, restart + 1)) continue;
      spec.command = {settings_.worker, "train", "--plan", plan_path_};
      std::vector<std::string> arguments = extras_;
      if (restart > 0) {
        arguments =
            without_option(without_option(arguments, "--overwrite", false), "--resume", false);
        arguments.push_back("--resume");
        arguments = without_option(arguments, "--startup-record", true);
        arguments.insert(arguments.end(), {"--startup-record", recovery_->startup_path});
      }
      if (!has_flag(arguments, "--hand-over-on-request")) {
        arguments.push_back("--hand-over-on-request");
      }
      spec.command.insert(spec.command.end(), arguments.begin(), arguments.end());
      spec.processes = static_cast<int>(devices.size());
      spec.ranks.clear();  // every rank of the plan, here
      spec.world_size = 0;
      spec.handover_exit_code = kExitPlanSwitch;
      spec.local_ranks.clear();
      for (int device : devices) spec.local_ranks.push_back(local_rank_of_.at(device));
      if (recovery_) recovery_->record["times"]["relaunched"] = epoch_seconds(WallClock::now());
      // Each recovery is reported as soon as the new run's first step is done; devices
      // offered meanwhile (hyperpipe join) are answered as they come.
      clear_handover(elastic_dir_);
      spec.tick = [this] {
        if (recovery_ && !recovery_->finished && finish_recovery(*recovery_, err_)) {
          write_recoveries();
        }
        take_joins();
        if (hosts_) take_agent_changes();
      };
      launch::LaunchResult result;
      if (hosts_) {
        auto outcome = hosts_->run_round(spec, plan_path_, arguments, devices);
        if (!outcome.host_lost.empty()) {
          lose(outcome.devices_lost,
               {{"host", outcome.host_lost}, {"devices", outcome.devices_lost}},
               fmt::format("host {} ({} {})", outcome.host_lost,
                           noun_for(outcome.devices_lost.size(), "device"),
                           plan::format_devices(outcome.devices_lost)),
               fmt::format("its heartbeat stopped for {} s", settings_.heartbeat_timeout),
               outcome.result, restart + 1);
          continue;
        }
        result = outcome.result;
      } else {
        result = launch::launch_processes(spec, out_, err_);
      }
      const bool handed_over =
          result.failed_rank < 0 && !result.signal &&
          std::count(result.codes.begin(), result.codes.end(), kExitPlanSwitch) > 0;
      if (handed_over) {
        if (const auto reason = handover_requested(elastic_dir_)) {
          replan_with_joined(result, *reason, restart + 1);
        } else {
          switch_plans(result, restart + 1);
        }
        continue;
      }
      if (result.exit_code == 0 && !result.stopped) return;
      if (result.signal && result.failed_rank < 0) {
        throw CommandFailed(fmt::format("stopped by {}: every worker stopped after its step",
                                        signal_name(result.signal)),
                            result.exit_code);
      }
      if (result.failed_rank < 0) {
        throw CommandFailed("the run's processes were stopped with no failure to blame",
                            kExitInternalError);
      }
      recover_from(result, devices, restart + 1);
    }
  }

 private:
  void log_line(const std::string& text) { err_ << "[elastic] " << text << '\n' << std::flush; }

  // After rank `failed_rank` of the plan's run failed: the plan for the devices left, or
  // the reason not to go on.
  void recover_from(const launch::LaunchResult& result, const std::vector<int>& devices,
                    int restart) {
    const int rank = result.failed_rank;
    const int device = devices.at(static_cast<size_t>(rank));
    const std::string& type = checked_.cluster.device_type(device).name;
    if (result.exit_code == kExitBadInput) {
      throw CommandFailed(fmt::format("rank {} refused its inputs (exit code {}); not restarting: "
                                      "a restart would refuse them too",
                                      rank, result.exit_code),
                          result.exit_code);
    }
    json lost{{"rank", rank},
              {"device", device},
              {"gpu_type", type},
              {"exit_code", result.exit_code},
              {"devices", {device}}};
    if (hosts_) lost["host"] = hosts_->host_of(device).value_or("");
    lose({device}, lost, fmt::format("rank {} (device {}, {})", rank, device, type),
         fmt::format("exit code {}", result.exit_code), result, restart);
  }

  // Goes on without `devices` (`what`, lost for `how`; `lost`, the record's account): the
  // plan for the devices left, or the reason not to go on.
  void lose(const std::vector<int>& devices, const json& lost, const std::string& what,
            const std::string& how, const launch::LaunchResult& result, int restart) {
    const int exit_code = result.exit_code != 0 ? result.exit_code : kExitInternalError;
    if (++losses_ > settings_.max_restarts) {
      throw CommandFailed(
          fmt::format("{} failed ({}) and the {} --max-restarts allows are used up; "
                      "the run stopped at its last checkpoint",
                      what, how, counted(settings_.max_restarts, "restart")),
          exit_code);
    }
    for (int device : devices) {
      available_.erase(std::remove(available_.begin(), available_.end(), device), available_.end());
    }
    log_line(fmt::format("{} was lost ({}); {} left: {}", what, how,
                         counted(available_.size(), "device"), plan::format_devices(available_)));
    if (static_cast<int>(available_.size()) < settings_.min_devices) {
      throw CommandFailed(
          fmt::format("{} left, fewer than --min-devices {}; the run stopped at its "
                      "last checkpoint",
                      counted(available_.size(), "device"), settings_.min_devices),
          exit_code);
    }
    const double before = predicted_iteration(plan_);
    planner::Replanned replanned;
    try {
      replanned = plan_available();
    } catch (const InputError& error) {
      throw InputError("--elastic",
                       fmt::format("after losing {} {}", noun_for(devices.size(), "device"),
                                   plan::format_devices(devices)),
                       fmt::format("a plan that fits the {} left ({}); none does: {}",
                                   counted(available_.size(), "device"),
                                   plan::format_devices(available_), error.expected()));
    }
    adopt(replanned, before, restart);
    log_line(fmt::format("restart {} of at most {}: resuming from the last complete checkpoint",
                         losses_, settings_.max_restarts));
    Recovery recovery = recovery_for(restart);
    recovery.record = {
        {"restart", restart},
        {"kind", "loss"},
        {"lost", lost},
        {"devices_left", available_},
        {"plan", plan_path_},
        {"predicted_iteration_s", {{"before", before}, {"after", replanned.iteration_time}}},
        {"replan_search_s", replanned.seconds},
        {"times",
         {{"failure_seen", epoch_seconds(result.failure_seen)},
          {"others_stopped", epoch_seconds(result.all_exited)},
          {"replanned", epoch_seconds(WallClock::now())}}}};
    begin_recovery(std::move(recovery));
  }

  // The devices offered since the last look (hyperpipe join), each answered.
  void take_joins() {
    for (int device : join_requests(elastic_dir_)) {
      if (hosts_ && hosts_->host_of(device) && *hosts_->host_of(device) != kLeaderName) {
        answer_join(elastic_dir_, device,
                    {false, fmt::format("device {} is on host {}, whose agent offers it", device,
                                        *hosts_->host_of(device))});
        continue;
      }
      if (hosts_ && !hosts_->host_of(device)) {
        answer_join(elastic_dir_, device,
                    {false, fmt::format("device {} is on no host of the run: start `hyperpipe "
                                        "agent --devices {}` on its host",
                                        device, device)});
        continue;
      }
      answer_join(elastic_dir_, device, offer(device));
    }
  }

  // A device offered (by `hyperpipe join` or an agent): one that makes a faster plan has
  // the run hand over after its next checkpoint, the others are kept as spares that the
  // next plan (after a loss) may use. The answer.
  JoinAnswer offer(int device) {
    if (const auto refusal = join_refusal(checked_.cluster, available_, device)) {
      log_line(fmt::format("device {} offered: refused: {}", device, *refusal));
      return {false, *refusal};
    }
    available_.insert(std::upper_bound(available_.begin(), available_.end(), device), device);
    if (!local_rank_of_.count(device)) {
      const int slot = static_cast<int>(local_rank_of_.size());
      local_rank_of_[device] = slot;
    }
    if (!started_) return {true, "in the run from its start"};
    joined_.push_back(device);
    JoinAnswer answer{true, ""};
    const double now = predicted_iteration(plan_);
    try {
      const auto with_it = plan_available();
      if (with_it.iteration_time < now * (1 - join_gain_)) {
        request_handover(
            elastic_dir_,
            fmt::format("device {} joined: a plan with it is predicted to take {} "
                        "an iteration (now {})",
                        device, format_duration(with_it.iteration_time), format_duration(now)));
        answer.message = fmt::format(
            "the run plans again with it after its next checkpoint{} (predicted iteration "
            "{}, now {})",
            checkpoint_every_ ? fmt::format(" (every {} steps)", *checkpoint_every_)
                              : " (none before its end: no --checkpoint-every)",
            format_duration(with_it.iteration_time), format_duration(now));
      } else {
        answer.message = fmt::format(
            "kept as a spare: a plan with it is predicted to take {} an iteration, now {}, "
            "less than --adapt-gain {:.0f}% faster; the run plans with it after a loss",
            format_duration(with_it.iteration_time), format_duration(now), join_gain_ * 100);
      }
    } catch (const InputError& error) {
      answer.message =
          fmt::format("kept as a spare: no plan of the devices there fits ({})", error.expected());
    }
    log_line(fmt::format("device {} ({}) offered: {}", device,
                         checked_.cluster.device_type(device).name, answer.message));
    return answer;
  }

  // Agents that came offer their devices; those that went take theirs away (a round
  // running on them stops, and is recovered from as a loss).
  void take_agent_changes() {
    for (const auto& change : hosts_->look_at_agents()) {
      if (change.arrived) {
        log_line(fmt::format("agent {} offers {} {}", change.name,
                             noun_for(change.devices.size(), "device"),
                             plan::format_devices(change.devices)));
        for (int device : change.devices) offer(device);
        continue;
      }
      log_line(fmt::format("agent {} is gone (no heartbeat for {} s, or restarted): {} {}",
                           change.name, settings_.heartbeat_timeout,
                           noun_for(change.devices.size(), "device"),
                           plan::format_devices(change.devices)));
      for (int device : change.devices) {
        available_.erase(std::remove(available_.begin(), available_.end(), device),
                         available_.end());
        joined_.erase(std::remove(joined_.begin(), joined_.end(), device), joined_.end());
      }
    }
  }

  // Before the first round: the agents offer the plan's devices not here. Those that do
  // not come within --host-wait are planned without (down to --min-devices).
  void wait_for_hosts() {
    const auto needed = plan::devices_in_rank_order(plan_);
    const auto missing = [&] {
      std::vector<int> devices;
      for (int device : needed) {
        if (!std::binary_search(available_.begin(), available_.end(), device)) {
          devices.push_back(device);
        }
      }
      return devices;
    };
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(settings_.host_wait_seconds * 1e3));
    if (!missing().empty()) {
      log_line(fmt::format("waiting up to {} s for agents (hyperpipe agent) to offer {} {}",
                           settings_.host_wait_seconds, noun_for(missing().size(), "device"),
                           plan::format_devices(missing())));
    }
    const StopSignals signals(/*arm_alarm=*/false);  // Ctrl-C: the agents hear the run ended
    while (!missing().empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kHostPoll);
      if (const int signal_number = StopSignals::received()) {
        throw CommandFailed(
            fmt::format("stopped by {} while waiting for the agents", signal_name(signal_number)),
            128 + signal_number);
      }
      take_agent_changes();
    }
    if (missing().empty()) return;
    const std::string absent = plan::format_devices(missing());
    if (static_cast<int>(available_.size()) < settings_.min_devices) {
      throw CommandFailed(
          fmt::format("no agent offered device(s) {} in {} s (--host-wait), and the {} device(s) "
                      "there are fewer than --min-devices {}",
                      absent, settings_.host_wait_seconds, available_.size(),
                      settings_.min_devices),
          kExitInternalError);
    }
    log_line(fmt::format("no agent offered device(s) {} in {} s: planning without them", absent,
                         settings_.host_wait_seconds));
    const double before = predicted_iteration(plan_);
    try {
      adopt(plan_available(), before, 0);
    } catch (const InputError& error) {
      throw InputError(
          "--elastic", fmt::format("without device(s) {}", absent),
          fmt::format("a plan that fits the {} device(s) there ({}); none does: {}",
                      available_.size(), plan::format_devices(available_), error.expected()));
    }
  }

  // Devices of the plan whose host went before their round could start: lost as a host's
  // are. Whether there were any.
  bool lose_hostless_devices(const std::vector<int>& devices, int restart) {
    std::vector<int> hostless;
    for (int device : devices) {
      if (!hosts_->host_of(device)) hostless.push_back(device);
    }
    if (hostless.empty()) return false;
    launch::LaunchResult result;
    result.failure_seen = result.all_exited = WallClock::now();
    lose(hostless, {{"host", ""}, {"devices", hostless}},
         fmt::format("device(s) {}", plan::format_devices(hostless)),
         "their host went before the next round started", result, restart);
    return true;
  }

  // The run checkpointed and ended because devices joined: go on with a plan of every
  // device there from that checkpoint.
  void replan_with_joined(const launch::LaunchResult& result, const std::string& reason,
                          int restart) {
    log_line(fmt::format("the run ended after its checkpoint: {}", reason));
    // An adapted plan the run wrote meanwhile is for the devices it had: this one replaces it.
    const fs::path switch_path = fs::path(elastic_dir_) / kSwitchFile;
    if (fs::exists(switch_path)) {
      fs::rename(switch_path,
                 fs::path(elastic_dir_) / fmt::format("switch-{}.superseded.json", restart));
    }
    const double before = predicted_iteration(plan_);
    const std::vector<int> joined = joined_;
    planner::Replanned replanned = plan_available();
    const double after = replanned.iteration_time;
    adopt(std::move(replanned), before, restart);
    Recovery recovery = recovery_for(restart);
    recovery.record = {{"restart", restart},
                       {"kind", "join"},
                       {"joined", joined},
                       {"devices_left", available_},
                       {"plan", plan_path_},
                       {"predicted_iteration_s", {{"before", before}, {"after", after}}},
                       {"times",
                        {{"failure_seen", epoch_seconds(result.all_exited)},
                         {"others_stopped", epoch_seconds(result.all_exited)},
                         {"replanned", epoch_seconds(WallClock::now())}}}};
    begin_recovery(std::move(recovery));
  }

  // The planner's plan for every device there (lost ones aside, spares in).
  planner::Replanned plan_available() const {
    return planner::replan(plan_, model_, checked_.cluster, available_,
                           profiles_ ? &*profiles_ : nullptr);
  }

  // Goes on with `replanned` (restart `restart`), written beside the checkpoints.
  void adopt(planner::Replanned replanned, double before, int restart) {
    plan_ = std::move(replanned.plan);
    // The model the first plan names, and the cluster the run is on (--cluster's, if given).
    plan_.model = model_reference_;
    plan_.cluster = cluster_reference_;
    plan_path_ = (fs::path(elastic_dir_) / fmt::format("restart-{}.plan.json", restart)).string();
    json document = plan::to_json(plan_);
    document["predicted"] = {{"iteration_time_s", replanned.iteration_time}};
    write_file_atomically(plan_path_, document.dump(2) + "\n");
    joined_.clear();  // every device there is in this plan's search
    log_line(fmt::format("re-planned in {}: {}; predicted iteration {} (was {}); written to {}",
                         format_duration(replanned.seconds), plan::format_stages(plan_),
                         format_duration(replanned.iteration_time), format_duration(before),
                         plan_path_));
  }

  // Restart `restart`'s recovery, its start-up record to be written afresh.
  Recovery recovery_for(int restart) const {
    Recovery recovery;
    recovery.startup_path =
        (fs::path(elastic_dir_) / fmt::format("restart-{}.startup.json", restart)).string();
    fs::remove(recovery.startup_path);
    return recovery;
  }

  void begin_recovery(Recovery recovery) {
    if (recovery_) recoveries_.push_back(recovery_->record);
    recovery_ = std::move(recovery);
    write_recoveries();
  }

  // The run checkpointed and ended for the plan its rank 0 adapted (train --adapt):
  // go on with it from that checkpoint, on the same devices.
  void switch_plans(const launch::LaunchResult& result, int restart) {
    const std::string switch_path = (fs::path(elastic_dir_) / kSwitchFile).string();
    std::ifstream in(switch_path);
    const json decided = json::parse(in, nullptr, false);
    if (decided.is_discarded() || !decided.contains("plan")) {
      throw CommandFailed(fmt::format("the run ended for a switch of plans, but {} does not say "
                                      "which plan",
                                      switch_path),
                          kExitPlanSwitch);
    }
    plan_path_ = decided["plan"].get<std::string>();
    plan_ = plan::load_plan(plan_path_);
    log_line(fmt::format("switching to {}: {}", plan_path_, plan::format_stages(plan_)));
    Recovery recovery = recovery_for(restart);
    recovery.record = {{"restart", restart},
                       {"kind", "switch"},
                       {"devices_left", available_},
                       {"plan", plan_path_},
                       {"speeds", decided.value("speeds", json::object())},
                       {"predicted_iteration_s", decided.value("predicted_iteration_s", json())},
                       {"switch_cost_estimate_s", decided.value("switch_cost_estimate_s", 0.0)},
                       {"times",
                        {{"failure_seen", epoch_seconds(result.all_exited)},
                         {"others_stopped", epoch_seconds(result.all_exited)},
                         {"replanned", epoch_seconds(result.all_exited)}}}};
    // Kept, by switch, beside the plans: the next one writes switch.json afresh.
    fs::rename(switch_path,
               (fs::path(elastic_dir_) / fmt::format("switch-{}.json", restart)).string());
    begin_recovery(std::move(recovery));
  }

  double predicted_iteration(const plan::Plan& plan) const {
    return planner::predicted_iteration(plan, model_, checked_.cluster,
                                        profiles_ ? &*profiles_ : nullptr);
  }

  void write_recoveries() const {
    json all = recoveries_;
    if (recovery_) all.push_back(recovery_->record);
    write_file_atomically((fs::path(elastic_dir_) / kRecoveryFile).string(),
                          json{{"format", kRecoveryFormat}, {"recoveries", all}}.dump(2) + "\n");
  }

  plan::CheckedPlan checked_;
  model::Model model_;
  std::vector<std::string> extras_;
  ElasticSettings settings_;
  std::ostream& out_;
  std::ostream& err_;
  std::string elastic_dir_;
  std::optional<cost::ProfileDb> profiles_;
  plan::Plan plan_;              // the plan running now
  std::string plan_path_;        // its file
  std::string model_reference_;  // as restart plans name them
  std::string cluster_reference_;
  std::map<int, int> local_rank_of_;
  std::vector<int> available_;            // devices not lost (spares that joined in), ascending
  std::vector<int> joined_;               // devices that joined since the last plan was made
  double join_gain_ = kDefaultAdaptGain;  // a plan with a device that joined must gain this
  std::optional<int64_t> checkpoint_every_;
  int losses_ = 0;                    // restarts after a lost device (switches of plan aside)
  std::optional<HostRounds> hosts_;   // a run across hosts: the agents and rounds
  bool started_ = false;              // the first round began (offers may hand over now)
  std::optional<Recovery> recovery_;  // the latest recovery
  json recoveries_ = json::array();   // those before it
};

}  // namespace

void launch_elastic(const std::string& plan_path, const std::vector<std::string>& extras,
                    launch::LaunchSpec base, const ElasticSettings& settings, std::ostream& out,
                    std::ostream& err) {
  ElasticRun run(plan_path, extras, settings, out, err);
  try {
    run.run(std::move(base));
  } catch (const std::exception& error) {
    run.end(false, error.what());
    throw;
  }
  run.end(true, "");
}

}  // namespace hyperpipe::elastic
