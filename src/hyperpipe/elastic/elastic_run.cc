#include "hyperpipe/elastic/elastic_run.h"

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
#include "hyperpipe/elastic/blame.h"
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
using launch::append;
using launch::given;
using launch::model_as_run;
using launch::value_of;
using launch::without;
namespace train_flags = launch::train_flags;
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

// The supervisor's decisions carried out: the processes of each round (here, or on every
// host through HostRounds), the plans written beside the checkpoints, the answers to joins,
// the hand-overs asked of rank 0 and the recoveries' timings.
class ElasticRun {
 public:
  ElasticRun(const std::string& plan_path, const std::vector<std::string>& extras,
             const ElasticSettings& settings, std::ostream& out, std::ostream& err)
      : extras_(extras),
        settings_(settings),
        out_(out),
        err_(err),
        supervisor_(supervised_run(plan_path, extras), rules(settings, extras), err) {
    const auto checkpoint_dir = value_of(extras, train_flags::kCheckpointDir);
    if (!checkpoint_dir) {
      throw InputError("--elastic", "",
                       "a --checkpoint-dir: an elastic run continues from its last checkpoint");
    }
    if (!value_of(extras, train_flags::kCheckpointEvery)) {
      log_line(
          "no --checkpoint-every: a restart goes back to the start (checkpoints are written "
          "only at the end)");
    }
    elastic_dir_ = elastic_directory(*checkpoint_dir);
    fs::create_directories(elastic_dir_);
    // Requests and hand-overs are for a launcher that is running: none is for this one yet.
    clear_joins(elastic_dir_);
    clear_handover(elastic_dir_);
    // A new run must not take an earlier one's pending switch or measured speeds for its own.
    if (!given(extras, train_flags::kResume)) {
      for (const char* stale : {kSwitchFile, kPlannedSpeedsFile}) {
        fs::remove(fs::path(elastic_dir_) / stale);
      }
    }
    plan_path_ = plan_path;
    if (!settings.devices_here.empty()) {
      // Across hosts: the others' devices are the run's once their agents offer them.
      supervisor_.start_with(settings.devices_here);
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
    supervisor_.start();
    for (int restart = 0;; ++restart) {
      const auto devices = plan::devices_in_rank_order(supervisor_.plan());
      if (hosts_ && lose_hostless_devices(devices, restart + 1)) continue;
      spec.command = {settings_.worker, "train"};
      append(spec.command, train_flags::kPlan, plan_path_);
      std::vector<std::string> arguments = extras_;
      if (restart > 0) {
        arguments = without(without(arguments, train_flags::kOverwrite), train_flags::kResume);
        append(arguments, train_flags::kResume);
        arguments = without(arguments, train_flags::kStartupRecord);
        append(arguments, train_flags::kStartupRecord, recovery_->startup_path);
      }
      if (!given(arguments, train_flags::kHandOverOnRequest)) {
        append(arguments, train_flags::kHandOverOnRequest);
      }
      spec.command.insert(spec.command.end(), arguments.begin(), arguments.end());
      spec.processes = static_cast<int>(devices.size());
      spec.ranks.clear();  // every rank of the plan, here
      spec.world_size = 0;
      spec.handover_exit_code = kExitPlanSwitch;
      spec.local_ranks.clear();
      for (int device : devices) spec.local_ranks.push_back(supervisor_.local_rank(device));
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
      const RoundEnd end = read_round_end(result, kExitPlanSwitch);
      if (end == RoundEnd::kFinished) return;
      if (auto ending = ending_of(end, result)) throw std::move(*ending);
      if (end == RoundEnd::kRankLost) {
        lose_rank(result, devices, restart + 1);
      } else if (const auto reason = handover_requested(elastic_dir_)) {
        replan_with_joined(result, *reason, restart + 1);  // handed over for devices joined
      } else {
        switch_plans(result, restart + 1);  // handed over for a plan its rank 0 adapted
      }
    }
  }

 private:
  // The run as the supervisor sees it: the plan (its model and cluster named as every later
  // plan names them: the first plan's model, the cluster the run is on, --cluster's if
  // given), the model as the run computes it, its profiles.
  static SupervisedRun supervised_run(const std::string& plan_path,
                                      const std::vector<std::string>& extras) {
    const auto cluster = value_of(extras, train_flags::kCluster);
    plan::CheckedPlan checked = plan::load_checked_plan(plan_path, cluster);
    SupervisedRun run{checked.plan, model_as_run(checked.model, extras), checked.cluster,
                      std::nullopt};
    run.plan.model = plan::reference_from_anywhere(plan_path, checked.plan.model);
    run.plan.cluster = cluster ? plan::reference_from_anywhere("", *cluster)
                               : plan::reference_from_anywhere(plan_path, checked.plan.cluster);
    if (const auto profiles = value_of(extras, train_flags::kProfiles)) {
      run.profiles = cost::ProfileDb::load_for(*profiles, checked.model.config().name);
    }
    return run;
  }

  static SupervisorRules rules(const ElasticSettings& settings,
                               const std::vector<std::string>& extras) {
    SupervisorRules rules;
    rules.max_restarts = settings.max_restarts;
    rules.min_devices = settings.min_devices;
    if (const auto gain = value_of(extras, train_flags::kAdaptGain)) rules.join_gain = *gain;
    if (const auto every = value_of(extras, train_flags::kCheckpointEvery)) {
      rules.checkpoint_every = *every;
    }
    return rules;
  }

  void log_line(const std::string& text) { err_ << "[elastic] " << text << '\n' << std::flush; }

  // Rank `failed_rank` of the round on `devices` failed: its device is lost.
  void lose_rank(const launch::LaunchResult& result, const std::vector<int>& devices, int restart) {
    const int rank = result.failed_rank;
    const int device = devices.at(static_cast<size_t>(rank));
    const std::string& type = supervisor_.cluster().device_type(device).name;
    json lost{{"rank", rank},
              {"device", device},
              {"gpu_type", type},
              {"exit_code", result.exit_code},
              {"devices", {device}}};
    if (hosts_) lost["host"] = hosts_->host_of(device).value_or("");
    lose({device}, lost, fmt::format("rank {} (device {}, {})", rank, device, type),
         fmt::format("exit code {}", result.exit_code), result, restart);
  }

  // Goes on without `devices` (`what`, lost for `how`; `lost`, the record's account) with
  // the supervisor's plan for the devices left, or ends as it decides.
  void lose(const std::vector<int>& devices, const json& lost, const std::string& what,
            const std::string& how, const launch::LaunchResult& result, int restart) {
    const int exit_code = result.exit_code != 0 ? result.exit_code : kExitInternalError;
    const PlanChange change = supervisor_.lose(devices, what, how, exit_code);
    write_plan(change, restart);
    log_line(fmt::format("restart {} of at most {}: resuming from the last complete checkpoint",
                         supervisor_.losses(), settings_.max_restarts));
    Recovery recovery = recovery_for(restart);
    recovery.record = {{"restart", restart},
                       {"kind", "loss"},
                       {"lost", lost},
                       {"devices_left", supervisor_.available()},
                       {"plan", plan_path_},
                       {"predicted_iteration_s",
                        {{"before", change.before}, {"after", change.replanned.iteration_time}}},
                       {"replan_search_s", change.replanned.seconds},
                       {"times",
                        {{"failure_seen", epoch_seconds(result.failure_seen)},
                         {"others_stopped", epoch_seconds(result.all_exited)},
                         {"replanned", epoch_seconds(WallClock::now())}}}};
    begin_recovery(std::move(recovery));
  }

  // The devices offered since the last look (hyperpipe join), each answered.
  void take_joins() {
    for (int device : join_requests(elastic_dir_)) {
      const auto refusal = join_route_refusal(device, hosts_.has_value(),
                                              hosts_ ? hosts_->host_of(device) : std::nullopt);
      answer_join(elastic_dir_, device, refusal ? JoinAnswer{false, *refusal} : offer(device));
    }
  }

  // A device offered, answered as the supervisor decides; one whose plan pays has the run
  // hand over after its next checkpoint.
  JoinAnswer offer(int device) {
    Offered offered = supervisor_.offer(device);
    if (offered.hand_over) request_handover(elastic_dir_, *offered.hand_over);
    return offered.answer;
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
      supervisor_.withdraw(change.devices);
    }
  }

  // Before the first round: the agents offer the plan's devices not here. Those that do
  // not come within --host-wait are planned without (down to --min-devices).
  void wait_for_hosts() {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(settings_.host_wait_seconds * 1e3));
    if (const auto missing = supervisor_.missing(); !missing.empty()) {
      log_line(fmt::format("waiting up to {} s for agents (hyperpipe agent) to offer {} {}",
                           settings_.host_wait_seconds, noun_for(missing.size(), "device"),
                           plan::format_devices(missing)));
    }
    const StopSignals signals(/*arm_alarm=*/false);  // Ctrl-C: the agents hear the run ended
    while (!supervisor_.missing().empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kHostPoll);
      if (const int signal_number = StopSignals::received()) {
        throw CommandFailed(
            fmt::format("stopped by {} while waiting for the agents", signal_name(signal_number)),
            128 + signal_number);
      }
      take_agent_changes();
    }
    if (supervisor_.missing().empty()) return;
    write_plan(supervisor_.go_on_without_missing(settings_.host_wait_seconds), 0);
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
    const std::vector<int> joined = supervisor_.joined();
    const PlanChange change = supervisor_.take_joined();
    write_plan(change, restart);
    Recovery recovery = recovery_for(restart);
    recovery.record = {{"restart", restart},
                       {"kind", "join"},
                       {"joined", joined},
                       {"devices_left", supervisor_.available()},
                       {"plan", plan_path_},
                       {"predicted_iteration_s",
                        {{"before", change.before}, {"after", change.replanned.iteration_time}}},
                       {"times",
                        {{"failure_seen", epoch_seconds(result.all_exited)},
                         {"others_stopped", epoch_seconds(result.all_exited)},
                         {"replanned", epoch_seconds(WallClock::now())}}}};
    begin_recovery(std::move(recovery));
  }

  // Writes the plan the supervisor went on with (restart `restart`) beside the checkpoints.
  void write_plan(const PlanChange& change, int restart) {
    plan_path_ = (fs::path(elastic_dir_) / fmt::format("restart-{}.plan.json", restart)).string();
    json document = plan::to_json(change.replanned.plan);
    document["predicted"] = {{"iteration_time_s", change.replanned.iteration_time}};
    write_file_atomically(plan_path_, document.dump(2) + "\n");
    log_line(fmt::format("re-planned in {}: {}; predicted iteration {} (was {}); written to {}",
                         format_duration(change.replanned.seconds),
                         plan::format_stages(change.replanned.plan),
                         format_duration(change.replanned.iteration_time),
                         format_duration(change.before), plan_path_));
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
    supervisor_.switch_to(plan::load_plan(plan_path_));
    log_line(
        fmt::format("switching to {}: {}", plan_path_, plan::format_stages(supervisor_.plan())));
    Recovery recovery = recovery_for(restart);
    recovery.record = {{"restart", restart},
                       {"kind", "switch"},
                       {"devices_left", supervisor_.available()},
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

  void write_recoveries() const {
    json all = recoveries_;
    if (recovery_) all.push_back(recovery_->record);
    write_file_atomically((fs::path(elastic_dir_) / kRecoveryFile).string(),
                          json{{"format", kRecoveryFormat}, {"recoveries", all}}.dump(2) + "\n");
  }

  std::vector<std::string> extras_;
  ElasticSettings settings_;
  std::ostream& out_;
  std::ostream& err_;
  Supervisor supervisor_;
  std::string elastic_dir_;
  std::string plan_path_;             // the file of the plan running now
  std::optional<HostRounds> hosts_;   // a run across hosts: the agents and rounds
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
