#include "hyperpipe/elastic/host_rounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "hyperpipe/common/epoch_time.h"
#include "hyperpipe/elastic/blame.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::elastic {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

// How often the leader looks for the agents' reports when none of the round's ranks is
// its own, or after its own have ended.
constexpr auto kReportPoll = std::chrono::milliseconds(50);

}  // namespace

HostRounds::HostRounds(std::string elastic_dir, std::vector<int> devices_here, std::string address,
                       int port, double heartbeat_timeout, std::ostream& out, std::ostream& err)
    : elastic_dir_(std::move(elastic_dir)),
      devices_here_(std::move(devices_here)),
      address_(std::move(address)),
      port_(port),
      run_(new_instance_id()),
      liveness_(heartbeat_timeout),
      out_(out),
      err_(err) {
  clear_rounds(elastic_dir_);
  heartbeat_.emplace(heartbeat_path(elastic_dir_, kLeaderName),
                     Heartbeat{kLeaderName, new_instance_id(), run_, devices_here_, address_, 0});
}

void HostRounds::log(const std::string& text) const {
  err_ << "[elastic] " << text << '\n' << std::flush;
}

std::vector<AgentChange> HostRounds::look_at_agents() {
  std::vector<AgentChange> changes;
  const auto beats = read_agent_heartbeats(elastic_dir_);
  for (const auto& [name, beat] : beats) liveness_.see(name, beat);
  // Those gone: their heartbeat stopped, or another process of theirs beats now.
  for (auto it = agents_.begin(); it != agents_.end();) {
    if (liveness_.alive(it->first) && liveness_.instance(it->first) == it->second.instance) {
      ++it;
      continue;
    }
    changes.push_back({it->first, it->second.devices, false});
    it = agents_.erase(it);
  }
  // Those come: an alive process not yet admitted; a device another host has is not theirs.
  for (const auto& [name, beat] : beats) {
    if (agents_.count(name) || !liveness_.alive(name) ||
        liveness_.instance(name) != beat.instance) {
      continue;
    }
    Agent agent{beat.instance, beat.address, {}, beat.devices};
    for (int device : beat.devices) {
      if (const auto holder = host_of(device)) {
        log(fmt::format("agent {} offers device {}, which {} has: not taken from it", name, device,
                        *holder));
        continue;
      }
      agent.devices.push_back(device);
    }
    changes.push_back({name, agent.devices, true});
    agents_[name] = std::move(agent);
  }
  return changes;
}

std::optional<std::string> HostRounds::host_of(int device) const {
  if (std::find(devices_here_.begin(), devices_here_.end(), device) != devices_here_.end()) {
    return std::string(kLeaderName);
  }
  for (const auto& [name, agent] : agents_) {
    if (std::find(agent.devices.begin(), agent.devices.end(), device) != agent.devices.end()) {
      return name;
    }
  }
  return std::nullopt;
}

bool HostRounds::still_there(const std::string& host, const std::string& instance) const {
  const auto found = agents_.find(host);
  return found != agents_.end() && found->second.instance == instance;
}

bool HostRounds::round_must_stop(const Round& round) const {
  for (const auto& assignment : round.assignments) {
    if (assignment.host == kLeaderName) continue;
    if (!still_there(assignment.host, assignment.instance)) return true;
    const auto report = read_round_report(elastic_dir_, run_, round.number, assignment.host);
    if (report && report->failed_rank >= 0) return true;
  }
  return false;
}

RoundOutcome HostRounds::run_round(launch::LaunchSpec spec, const std::string& plan,
                                   const std::vector<std::string>& arguments,
                                   const std::vector<int>& devices) {
  Round round;
  round.run = run_;
  round.number = ++rounds_;
  round.plan = plan;
  round.directory = fs::current_path().string();
  round.arguments = arguments;
  round.port = port_;
  round.world_size = static_cast<int>(devices.size());
  spec.ranks.clear();
  spec.local_ranks.clear();
  std::set<std::string> hosts;                     // the agents in the round
  std::map<std::string, std::string> instance_of;  // the process of each given ranks
  for (size_t rank = 0; rank < devices.size(); ++rank) {
    const int device = devices[rank];
    const std::string host = host_of(device).value_or(kLeaderName);
    RoundAssignment assignment{device, static_cast<int>(rank), 0, host, ""};
    const std::vector<int>& order = host == kLeaderName ? devices_here_ : agents_.at(host).offered;
    assignment.local_rank =
        static_cast<int>(std::find(order.begin(), order.end(), device) - order.begin());
    if (host == kLeaderName) {
      spec.ranks.push_back(assignment.rank);
      spec.local_ranks.push_back(assignment.local_rank);
    } else {
      assignment.instance = agents_.at(host).instance;
      hosts.insert(host);
      instance_of[host] = assignment.instance;
    }
    round.assignments.push_back(assignment);
  }
  const std::string& rank0_host = round.assignments.front().host;
  round.master_address = rank0_host == kLeaderName ? address_ : agents_.at(rank0_host).address;
  write_round(elastic_dir_, round);
  log(fmt::format(
      "round {}: {} rank(s) here, the rest on {}; rank 0 at {}:{}", round.number, spec.ranks.size(),
      hosts.empty() ? std::string("no other host") : fmt::format("{}", fmt::join(hosts, ", ")),
      round.master_address, round.port));

  spec.processes = static_cast<int>(spec.ranks.size());
  spec.world_size = round.world_size;
  spec.address = round.master_address;
  spec.port = round.port;
  // When the round was first seen to be in trouble on another host: a host's loss is timed
  // from there, or from a rank here failing on it, whichever came first.
  std::optional<std::chrono::system_clock::time_point> trouble_seen;
  spec.stop_when = [&] {
    if (!round_must_stop(round)) return false;
    if (!trouble_seen) trouble_seen = std::chrono::system_clock::now();
    return true;
  };
  launch::LaunchResult local;
  if (spec.processes > 0) {
    local = launch::launch_processes(spec, out_, err_);
  } else {
    // None of this round's ranks is here: the leader watches the agents' until they end.
    const auto all_reported = [&] {
      return std::all_of(hosts.begin(), hosts.end(), [&](const std::string& host) {
        return read_round_report(elastic_dir_, run_, round.number, host).has_value();
      });
    };
    while (!all_reported() && !spec.stop_when()) {
      std::this_thread::sleep_for(kReportPoll);
      if (spec.tick) spec.tick();
    }
    local.stopped = !all_reported();
    local.all_exited = std::chrono::system_clock::now();
  }
  const bool local_ok = local.failed_rank < 0 && !local.stopped && !local.signal;
  if (!local_ok) request_round_stop(elastic_dir_, run_, round.number);

  // Every agent reports, or is gone. One that says nothing while alive is asked to stop,
  // and after its grace given up on as gone.
  const double patience =
      std::chrono::duration<double>(spec.grace).count() + 2 * liveness_.timeout_seconds();
  auto ask_by = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                         std::chrono::duration<double>(patience));
  auto give_up_by = ask_by + (ask_by - SteadyClock::now());
  std::map<std::string, RoundReport> reports;
  std::set<std::string> lost;
  for (;;) {
    for (const auto& host : hosts) {
      if (reports.count(host) || lost.count(host)) continue;
      if (auto report = read_round_report(elastic_dir_, run_, round.number, host)) {
        reports[host] = std::move(*report);
        continue;
      }
      if (!still_there(host, instance_of.at(host)) || SteadyClock::now() > give_up_by) {
        lost.insert(host);
        if (!trouble_seen) trouble_seen = std::chrono::system_clock::now();
      }
    }
    if (reports.size() + lost.size() == hosts.size()) break;
    if (SteadyClock::now() > ask_by && !round_stop_requested(elastic_dir_, run_, round.number)) {
      log(fmt::format("round {}: no report from {} yet; asking it to stop", round.number,
                      fmt::join(hosts, ", ")));
      request_round_stop(elastic_dir_, run_, round.number);
    }
    std::this_thread::sleep_for(kReportPoll);
    if (spec.tick) spec.tick();
  }

  RoundOutcome outcome;
  outcome.result = local;
  auto& merged = outcome.result;
  merged.all_exited = std::chrono::system_clock::now();
  merged.stopped = local.stopped || !lost.empty();
  for (const auto& assignment : round.assignments) {
    if (lost.count(assignment.host)) outcome.devices_lost.push_back(assignment.device);
  }
  if (!lost.empty()) {
    outcome.host_lost = fmt::format("{}", fmt::join(lost, ", "));
    if (!trouble_seen) trouble_seen = merged.all_exited;
    merged.failure_seen =
        local.failed_rank >= 0 ? std::min(local.failure_seen, *trouble_seen) : *trouble_seen;
    return outcome;
  }
  // Stopped by a signal here (Ctrl-C): the other hosts' ranks stopped with the run, and
  // none of them failed on its own.
  if (local.signal) {
    merged.failed_rank = -1;
    return outcome;
  }
  // The first failure of all hosts: one a signal ended on its own before the others, then
  // the earliest seen (each host's clock; hosts of one cluster keep theirs in step by NTP).
  std::vector<RankFailure> failures;
  if (local.failed_rank >= 0) {
    failures.push_back({local.failed_rank, local.exit_code, epoch_seconds(local.failure_seen)});
  }
  for (const auto& [host, report] : reports) {
    merged.codes.insert(merged.codes.end(), report.codes.begin(), report.codes.end());
    if (report.failed_rank >= 0) {
      failures.push_back({report.failed_rank, report.exit_code, report.failure_seen});
    }
  }
  const auto first = failure_to_blame(failures);
  if (!first) {
    merged.failed_rank = -1;
    if (!local.signal) merged.exit_code = 0;
    return outcome;
  }
  merged.failed_rank = first->rank;
  merged.exit_code = first->exit_code;
  merged.failure_seen = from_epoch_seconds(first->seen);
  return outcome;
}

void HostRounds::end(RoundState state, const std::string& reason) {
  Round round;
  round.run = run_;
  round.number = ++rounds_;
  round.state = state;
  round.reason = reason;
  try {
    write_round(elastic_dir_, round);
  } catch (const std::exception& error) {
    log(fmt::format("could not tell the agents the run is over: {}", error.what()));
  }
}

}  // namespace hyperpipe::elastic
