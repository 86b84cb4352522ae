// `hyperpipe launch --elastic`: a run on this machine that outlives the loss of a device.
// When a process dies, the others are stopped (their state goes: the run continues from
// its last complete checkpoint, so no half-applied step survives), the planner plans the
// model again on the devices left (with the run's profiles), and the run resumes with that
// plan from the checkpoint, which loads into any split. Each recovery is timed from the
// launcher seeing the death to the first step on the new plan. A device offered meanwhile
// (`hyperpipe join`, joins.h) is planned with, and the run hands over to that plan
// after its next checkpoint where it is faster. Across hosts, this launcher leads and an
// agent on each other host starts that host's ranks (host_rounds.h).
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/elastic/hosts.h"
#include "hyperpipe/elastic/supervisor.h"
#include "hyperpipe/launch/process_launcher.h"

namespace hyperpipe::elastic {

// What a recovery writes, beside the checkpoints: the plans, the processes' start-up
// records, and the timings (kRecoveryFormat).
inline constexpr const char* kElasticDirectory = "elastic";
inline constexpr const char* kRecoveryFile = "recovery.json";
inline constexpr const char* kRecoveryFormat = "hyperpipe.recovery/1";

// CHECKPOINT_DIR/elastic: where a leader, its agents, an adapting run and a joiner meet.
inline std::string elastic_directory(const std::string& checkpoint_dir) {
  return (std::filesystem::path(checkpoint_dir) / kElasticDirectory).string();
}

// How long a leader waits at the start for agents to offer the plan's other devices: long
// enough for `hyperpipe agent` to be started by hand or by a scheduler on the other hosts.
inline constexpr double kDefaultHostWaitSeconds = 60;

struct ElasticSettings {
  std::string worker;  // the hyperpipe-worker executable every rank of this host runs
  int max_restarts = kDefaultMaxRestarts;
  int min_devices = 1;
  // A run across hosts (launch --elastic --devices-here): this host's devices in LOCAL_RANK
  // order (empty: every device is here), its address and the run's port. The other devices
  // come from agents (`hyperpipe agent`, hosts.h).
  std::vector<int> devices_here;
  std::string address = "127.0.0.1";
  int port = 0;
  double host_wait_seconds = kDefaultHostWaitSeconds;
  double heartbeat_timeout = kDefaultHeartbeatTimeoutSeconds;
};

// Runs the plan's processes as `launch` does (`base`: everything but the command, the
// process count and the local ranks), restarting as above after each loss while restarts
// and devices last. `extras`: the arguments for `hyperpipe train` (--checkpoint-dir
// required). Returns when the run finished; throws CommandFailed when it failed or was
// stopped, InputError when no plan fits the devices left.
void launch_elastic(const std::string& plan_path, const std::vector<std::string>& extras,
                    launch::LaunchSpec base, const ElasticSettings& settings, std::ostream& out,
                    std::ostream& err);

}  // namespace hyperpipe::elastic
