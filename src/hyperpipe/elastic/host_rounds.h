// The leader's side of an elastic run across hosts (hosts.h): which agents are
// alive and which devices each offers, and one round of the run on every host: this
// host's ranks started here, the others' through the round file, all stopped when one
// side fails, and the first failure found across the hosts' reports (a host gone first).
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/elastic/hosts.h"
#include "hyperpipe/launch/process_launcher.h"

namespace hyperpipe::elastic {

// An agent that came (a new process offering its devices) or went (its heartbeat stopped,
// or it was restarted, or it ended).
struct AgentChange {
  std::string name;
  std::vector<int> devices;
  bool arrived = false;
};

// How a round ended on every host: the ranks' result as one launcher's would read (codes of
// every host, the failed rank global), and the host lost meanwhile, if one was.
struct RoundOutcome {
  launch::LaunchResult result;
  std::string host_lost;          // empty: none
  std::vector<int> devices_lost;  // the lost host's devices of the round
};

class HostRounds {
 public:
  HostRounds(std::string elastic_dir, std::vector<int> devices_here, std::string address, int port,
             double heartbeat_timeout, std::ostream& out, std::ostream& err);
  HostRounds(const HostRounds&) = delete;
  HostRounds& operator=(const HostRounds&) = delete;

  // Agents that came or went since the last look.
  std::vector<AgentChange> look_at_agents();

  // The host that has `device` now: kLeaderName, an alive agent, or none.
  std::optional<std::string> host_of(int device) const;

  // Runs `devices` (in rank order) as one round on every host: `spec` holds the command
  // for this host's ranks (worker, "train", "--plan", plan, then `arguments`), the grace,
  // the hand-over code and the tick (called while waiting on other hosts too).
  RoundOutcome run_round(launch::LaunchSpec spec, const std::string& plan,
                         const std::vector<std::string>& arguments,
                         const std::vector<int>& devices);

  // Tells every agent the run is over (kFinished, or kEnded for `reason`).
  void end(RoundState state, const std::string& reason);

 private:
  struct Agent {
    std::string instance;
    std::string address;
    std::vector<int> devices;  // those it offered that no other host had
    std::vector<int> offered;  // in its LOCAL_RANK order
  };
  // Whether the agent on `host` is still the process `instance` a round gave ranks to.
  bool still_there(const std::string& host, const std::string& instance) const;
  bool round_must_stop(const Round& round) const;
  void log(const std::string& text) const;

  std::string elastic_dir_;
  std::vector<int> devices_here_;
  std::string address_;
  int port_;
  std::string run_;
  Liveness liveness_;
  std::optional<Heartbeater> heartbeat_;
  std::map<std::string, Agent> agents_;  // admitted and alive
  int rounds_ = 0;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace hyperpipe::elastic
