// `hyperpipe agent`: parses the options of one host's side of an elastic run and runs it
// (elastic/agent.h).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/worker.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/elastic/agent.h"
#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::cli {
namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || !name[0]) return "agent";
  return name;
}

}  // namespace

void add_agent_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto args = std::make_shared<elastic::AgentSettings>();
  CLI::App* command = app.add_subcommand(
      "agent",
      "Run this host's devices in an elastic run led from another host (`hyperpipe launch "
      "--elastic --devices-here` there)");
  command
      ->add_option("--checkpoint-dir", args->checkpoint_dir,
                   "The run's --checkpoint-dir, on a file system every host shares")
      ->required();
  command
      ->add_option("--devices", args->devices,
                   "This host's devices (ids of the run's cluster), in the order of its GPUs "
                   "(LOCAL_RANK)")
      ->required()
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  command->add_option("--name", args->name, "This host's name in the run (default: its hostname)");
  command
      ->add_option("--address", args->address,
                   "This host's address, where rank 0 listens when a plan puts it here")
      ->default_val("127.0.0.1");
  command->add_option("--wait", args->wait_seconds, "Seconds to wait for the leader to appear")
      ->default_val(elastic::kDefaultLeaderWaitSeconds)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--heartbeat-timeout", args->heartbeat_timeout,
                   "Seconds without the leader's heartbeat after which it is gone")
      ->default_val(elastic::kDefaultHeartbeatTimeoutSeconds)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--grace", args->grace_seconds,
                   "Seconds this host's ranks get to stop when asked, before they are killed")
      ->default_val(elastic::kDefaultAgentGraceSeconds)
      ->check(CLI::NonNegativeNumber);
  command->footer(
      "Every host needs HYPERPIPE_JOB_TOKEN exported, the same as the leader's. Exit 0 when "
      "the run finished, 1 when the leader ended it or is gone.\n"
      "Example (on each host other than the leader's):\n"
      "  hyperpipe agent --checkpoint-dir /shared/run/checkpoints --devices 4,5,6,7 "
      "--address 10.0.0.2");
  command->callback([args, &out, &err] {
    if (args->name.empty()) args->name = host_name();
    if (const auto refusal = elastic::agent_name_refusal(args->name)) {
      throw InputError("--name", args->name, *refusal);
    }
    std::vector<int> sorted = args->devices;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      throw InputError("--devices", plan::format_devices(args->devices), "each device once");
    }
    if (!std::getenv(kJobTokenVariable)) {
      throw InputError("agent", "",
                       fmt::format("{} exported, the same as the leader's: this host's ranks "
                                   "meet the others under it",
                                   kJobTokenVariable));
    }
    args->worker = require_worker("agent");
    elastic::run_agent(*args, out, err);
  });
}

}  // namespace hyperpipe::cli
