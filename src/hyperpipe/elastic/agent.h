// One host's side of an elastic run led from another host (`hyperpipe launch --elastic
// --devices-here` there, hosts.h): it offers its devices by heartbeat, starts the ranks
// each round gives them, stops them when the leader says so, and reports how they ended;
// it ends with the run, or when the leader is gone. Plain files and processes: no libtorch.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/elastic/hosts.h"

namespace hyperpipe::elastic {

// How long an agent waits for a leader by default: a leader started by hand on another
// host, or queued by a scheduler, may well come minutes later.
inline constexpr double kDefaultLeaderWaitSeconds = 600;
// Seconds this host's ranks get to stop when asked, before they are killed.
inline constexpr double kDefaultAgentGraceSeconds = 5;

struct AgentSettings {
  std::string worker;  // the hyperpipe-worker executable the ranks run
  std::string checkpoint_dir;
  std::vector<int> devices;  // this host's, in LOCAL_RANK order
  std::string name;          // this host's name in the run
  std::string address = "127.0.0.1";
  double wait_seconds = kDefaultLeaderWaitSeconds;
  double heartbeat_timeout = kDefaultHeartbeatTimeoutSeconds;
  double grace_seconds = kDefaultAgentGraceSeconds;
};

// Why `name` cannot name an agent (it becomes a file name beside the leader's); nothing
// when it can.
std::optional<std::string> agent_name_refusal(const std::string& name);

// Runs the agent until the run finishes (returns) or ends, is stopped, or loses its leader
// (throws CommandFailed).
void run_agent(const AgentSettings& settings, std::ostream& out, std::ostream& err);

}  // namespace hyperpipe::elastic
