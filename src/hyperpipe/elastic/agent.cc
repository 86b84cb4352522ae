#include "hyperpipe/elastic/agent.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <thread>

#include "hyperpipe/common/epoch_time.h"
#include "hyperpipe/common/exit_codes.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/elastic/elastic_run.h"
#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/launch/worker_arguments.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::elastic {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How often an idle agent looks at the leader's heartbeat and round.
constexpr auto kIdlePoll = std::chrono::milliseconds(100);

class Agent {
 public:
  Agent(const AgentSettings& args, std::ostream& out, std::ostream& err)
      : args_(args),
        elastic_dir_(fs::absolute(fs::path(args.checkpoint_dir) / kElasticDirectory).string()),
        instance_(new_instance_id()),
        leader_(args.heartbeat_timeout),
        out_(out),
        err_(err) {}

  void run() {
    fs::create_directories(elastic_dir_);
    const Heartbeater heartbeat(heartbeat_path(elastic_dir_, args_.name),
                                {args_.name, instance_, "", args_.devices, args_.address, 0});
    const StopSignals signals(/*arm_alarm=*/false);
    log(
        fmt::format("offering device(s) {} to the elastic run in {} (waiting up to {} s for "
                    "its leader)",
                    plan::format_devices(args_.devices), args_.checkpoint_dir, args_.wait_seconds));
    const auto give_up =
        Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(args_.wait_seconds * 1e3));
    bool leader_seen = false;
    for (;; std::this_thread::sleep_for(kIdlePoll)) {
      if (const int signal_number = StopSignals::received()) {
        throw CommandFailed(fmt::format("stopped by {}", signal_name(signal_number)),
                            128 + signal_number);
      }
      if (!look_at_leader()) {
        if (leader_seen) {
          throw CommandFailed(
              fmt::format("the leader's heartbeat stopped ({} s without a beat): its run is over "
                          "or its host is gone",
                          args_.heartbeat_timeout),
              kExitInternalError);
        }
        if (Clock::now() > give_up) {
          throw CommandFailed(fmt::format("no leader in {} s: is `hyperpipe launch --elastic "
                                          "--checkpoint-dir {}` running?",
                                          args_.wait_seconds, args_.checkpoint_dir),
                              kExitInternalError);
        }
        continue;
      }
      if (!leader_seen) log("the leader is there");
      leader_seen = true;
      const auto round = read_round(elastic_dir_);
      if (!round || round->run != leader_run_) continue;
      if (round->state == RoundState::kFinished) {
        log("the run finished");
        return;
      }
      if (round->state == RoundState::kEnded) {
        throw CommandFailed("the run ended: " + round->reason, kExitInternalError);
      }
      if (round->run == done_run_ && round->number <= done_round_) continue;
      done_run_ = round->run;
      done_round_ = round->number;
      std::vector<RoundAssignment> mine;
      for (const auto& assignment : round->assignments) {
        if (assignment.host == args_.name && assignment.instance == instance_) {
          mine.push_back(assignment);
        }
      }
      if (mine.empty()) {
        log(fmt::format("round {}: none of this host's devices is in this round's plan",
                        round->number));
        continue;
      }
      run_round(*round, mine);
    }
  }

 private:
  void log(const std::string& text) {
    err_ << fmt::format("[agent {}] {}\n", args_.name, text) << std::flush;
  }

  // Takes in the leader's heartbeat; whether the leader is alive (and its run's id).
  bool look_at_leader() {
    const auto beat = read_heartbeat(heartbeat_path(elastic_dir_, kLeaderName));
    leader_.see(kLeaderName, beat);
    if (beat) leader_run_ = beat->run;
    return leader_.alive(kLeaderName);
  }

  // Starts this host's ranks of `round`, stops them when the leader asks (or is gone, or
  // has moved on), and reports how they ended.
  void run_round(const Round& round, const std::vector<RoundAssignment>& mine) {
    launch::LaunchSpec spec;
    spec.command = {args_.worker, "train"};
    launch::append(spec.command, launch::train_flags::kPlan, round.plan);
    spec.command.insert(spec.command.end(), round.arguments.begin(), round.arguments.end());
    spec.processes = static_cast<int>(mine.size());
    spec.world_size = round.world_size;
    spec.address = round.master_address;
    spec.port = round.port;
    spec.grace = std::chrono::milliseconds(static_cast<int64_t>(args_.grace_seconds * 1000));
    spec.handover_exit_code = kExitPlanSwitch;
    std::vector<int> devices;
    for (const auto& assignment : mine) {
      spec.ranks.push_back(assignment.rank);
      spec.local_ranks.push_back(assignment.local_rank);
      devices.push_back(assignment.device);
    }
    // The run's paths are the leader's, relative to its directory: the same on a shared
    // file system mounted at the same place.
    std::error_code error;
    if (!round.directory.empty() && fs::is_directory(round.directory, error)) {
      fs::current_path(round.directory, error);
    }
    log(fmt::format("round {}: starting rank(s) {} of {} (device(s) {}); rank 0 at {}:{}",
                    round.number, plan::format_devices(spec.ranks), round.world_size,
                    plan::format_devices(devices), round.master_address, round.port));
    spec.stop_when = [&] {
      if (round_stop_requested(elastic_dir_, round.run, round.number)) return true;
      if (!look_at_leader()) return true;
      const auto now = read_round(elastic_dir_);
      return now && (now->run != round.run || now->number != round.number ||
                     now->state != RoundState::kRunning);
    };
    const auto result = launch::launch_processes(spec, out_, err_);
    RoundReport report;
    report.host = args_.name;
    report.instance = instance_;
    report.number = round.number;
    report.ranks = spec.ranks;
    report.codes = result.codes;
    report.failed_rank = result.failed_rank;
    report.exit_code = result.exit_code;
    report.failure_seen = result.failed_rank >= 0 ? epoch_seconds(result.failure_seen) : 0;
    write_round_report(elastic_dir_, round.run, report);
    log(fmt::format("round {}: rank(s) ended with code(s) {}{}", round.number,
                    fmt::join(result.codes, ", "),
                    result.stopped ? " (stopped as the leader asked)" : ""));
  }

  AgentSettings args_;
  std::string elastic_dir_;
  std::string instance_;
  Liveness leader_;
  std::string leader_run_;
  std::string done_run_;  // the last round started (or skipped), by run and number
  int done_round_ = 0;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace

std::optional<std::string> agent_name_refusal(const std::string& name) {
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  if (plain && name != kLeaderName && name[0] != '.') return std::nullopt;
  return fmt::format(
      "a name of letters, digits, '.', '_' and '-', not starting with '.', other "
      "than \"{}\", and different on every host",
      kLeaderName);
}

void run_agent(const AgentSettings& settings, std::ostream& out, std::ostream& err) {
  Agent(settings, out, err).run();
}

}  // namespace hyperpipe::elastic
