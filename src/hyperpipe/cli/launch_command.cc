// `hyperpipe launch`: the processes of a plan's run on this machine, like torchrun: one
// `hyperpipe train` (hyperpipe-worker) per device, output prefixed by rank, all stopped if one
// fails. With --devices-here, this host's share of a run across hosts, each host running a
// launcher of its own.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/worker.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/elastic/elastic_run.h"
#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/launch/worker_arguments.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/sim/memory_verdict.h"

namespace hyperpipe::cli {

namespace train_flags = launch::train_flags;
namespace {

struct LaunchArgs {
  std::string plan;
  std::vector<int> devices_here;  // empty: every device of the plan
  std::string master_address = "127.0.0.1";
  int port = 0;
  double grace_seconds = 5;
  bool elastic = false;
  bool force = false;  // launch a plan predicted not to fit
  elastic::ElasticSettings elastic_settings;
};

// A run whose processes several launchers start (one per host) meets at one address and
// port, under one secret that every host's environment holds.
void check_shared_run(const LaunchArgs& args, bool adapts) {
  const std::string here = fmt::format("{} device(s) of the plan's", args.devices_here.size());
  if (adapts && !args.elastic) {
    throw InputError("--devices-here", here,
                     "--elastic beside --adapt: a run across hosts switches plans through the "
                     "elastic leader and its agents");
  }
  if (args.port == 0) {
    throw InputError("--devices-here", here,
                     "a --port, the same for every host's launcher: the run meets at "
                     "--master-addr:--port, where rank 0 listens");
  }
  if (!std::getenv(launch::kJobTokenVariable)) {
    throw InputError("--devices-here", here,
                     fmt::format("{0} exported, the same on every host (e.g. `export {0}=$(openssl "
                                 "rand -hex 16)`): each launcher would otherwise make a secret "
                                 "of its own, and the hosts could not meet",
                                 launch::kJobTokenVariable));
  }
}

// A plan whose predicted peak exceeds a device's memory less the margin fails at launch or
// later, after minutes of start-up: refused here, naming the device and the term, unless
// --force.
void check_fits(const LaunchArgs& args, const plan::CheckedPlan& checked,
                const std::vector<std::string>& extras) {
  const model::Model model = launch::model_as_run(checked.model, extras);
  std::optional<cost::ProfileDb> profiles;
  if (const auto path = launch::value_of(extras, train_flags::kProfiles)) {
    profiles = cost::ProfileDb::load_for(*path, model.config().name);
  }
  const cost::CostModel costs(model, checked.cluster, {}, profiles ? &*profiles : nullptr);
  const auto over = sim::over_capacity(sim::simulate_plan(costs, checked.plan));
  if (over.empty() || args.force) return;
  std::vector<std::string> lines;
  for (const auto& device : over) lines.push_back(device.text());
  throw InputError(
      "--plan", args.plan,
      fmt::format("a plan whose predicted peak fits every device: {} (see `hyperpipe simulate "
                  "--plan {}` for every term; --force launches it anyway)",
                  fmt::join(lines, "; "), args.plan));
}

// Pre-flight: one worker checks what every process would check alone (`train --check`:
// options, plan, data and its token ids, checkpoint directory, dtype and this machine's
// kernels for it), so a refusal comes once, with exit 2, before any process of the run
// starts, instead of once per rank after they have met.
void check_before_launch(const LaunchArgs& args, const std::vector<std::string>& extras,
                         std::ostream& err) {
  launch::LaunchSpec check;
  check.command = {require_worker("launch"), "train"};
  launch::append(check.command, train_flags::kCheck);
  launch::append(check.command, train_flags::kPlan, args.plan);
  for (const auto& extra : extras) check.command.push_back(extra);
  check.bare = true;         // one process: its error is the launch's
  std::ostringstream quiet;  // its "ready" line: the run's own output follows
  const auto result = launch::launch_processes(check, quiet, err);
  // Its message (above) is the one the user reads; no process of the run has started.
  if (result.exit_code != 0) throw CommandFailed("", result.exit_code);
}

// The options of `train --help` that launch passes on (those it has itself aside), as
// the worker prints them: what a launch accepts beyond its own.
std::string train_options(const CLI::App& launch_command) {
  const auto worker = worker_path();
  if (!worker) {
    return fmt::format(
        "Options of `hyperpipe train`: none here ({} is not beside hyperpipe: this "
        "build plans only).\n",
        kWorkerName);
  }
  launch::LaunchSpec help;
  help.command = {*worker, "train", "--help"};
  help.bare = true;
  std::ostringstream text;
  std::ostringstream errors;
  if (launch::launch_processes(help, text, errors).exit_code != 0) {
    return "Options of `hyperpipe train`: see `hyperpipe help train`.\n";
  }
  std::vector<std::string> own;
  for (const auto* option : launch_command.get_options()) {
    for (const auto& name : option->get_lnames()) own.push_back("--" + name);
  }
  // Each option's entry: a line "  -x,--name …" or "  --name …", then lines indented deeper.
  std::istringstream lines(text.str());
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
    const size_t name_start = line.find_first_not_of(' ');
    if (name_start == 2 && line[2] == '-') {
      std::string names = line.substr(2, line.find(' ', 2) - 2);
      keep = true;
      for (size_t at = 0; at != std::string::npos;) {
        const size_t comma = names.find(',', at);
        const std::string name =
            names.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        if (std::find(own.begin(), own.end(), name) != own.end() || name == "-h") keep = false;
        at = comma == std::string::npos ? comma : comma + 1;
      }
    }
    if (keep) result += line + "\n";
  }
  return "Options passed to each process's `hyperpipe train`:\n" + result;
}

}  // namespace

void add_launch_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto args = std::make_shared<LaunchArgs>();
  CLI::App* command = app.add_subcommand(
      "launch", "Run a plan on this machine: one `hyperpipe train` process per device");
  command->add_option("--plan", args->plan, "Plan file")->required();
  command->add_option("--port", args->port, "Rendezvous port (default: a free one)")
      ->check(CLI::Range(1, 65535));
  command
      ->add_option("--devices-here", args->devices_here,
                   "Start only these devices' processes (a run across hosts: every host runs "
                   "a launcher for its devices, with the same --master-addr, --port and "
                   "HYPERPIPE_JOB_TOKEN)")
      ->delimiter(',');
  command
      ->add_option("--master-addr", args->master_address,
                   "Address of the host of rank 0 (the first device in plan order), where the "
                   "run meets")
      ->default_val("127.0.0.1");
  command
      ->add_option("--grace", args->grace_seconds,
                   "Seconds the others get to stop after one fails, before they are killed")
      ->default_val(5.0)
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--elastic", args->elastic,
                    "When a process dies, plan again on the devices left and resume from the last "
                    "checkpoint (needs --checkpoint-dir); recoveries are timed in "
                    "CHECKPOINT_DIR/elastic/recovery.json");
  command
      ->add_option("--max-restarts", args->elastic_settings.max_restarts,
                   "With --elastic: restarts after which the next loss ends the run")
      ->default_val(elastic::kDefaultMaxRestarts)
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--min-devices", args->elastic_settings.min_devices,
                   "With --elastic: the fewest devices the run goes on with")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--host-wait", args->elastic_settings.host_wait_seconds,
                   "With --elastic --devices-here: seconds to wait at the start for agents "
                   "(`hyperpipe agent`) to offer the plan's other devices")
      ->default_val(elastic::kDefaultHostWaitSeconds)
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--heartbeat-timeout", args->elastic_settings.heartbeat_timeout,
                   "With --elastic --devices-here: seconds without an agent's heartbeat after "
                   "which its host and devices are gone")
      ->default_val(elastic::kDefaultHeartbeatTimeoutSeconds)
      ->check(CLI::PositiveNumber);
  command->add_flag("--force", args->force,
                    "Launch a plan the cost model predicts will not fit a device's memory");
  command->allow_extras();
  command->fallthrough(false);  // what launch does not know is train's
  command->footer([command] { return train_options(*command); });
  command->footer(
      "Every other option goes to `hyperpipe train` (`hyperpipe help train`); with "
      "--format json, stdout is rank 0's JSON document and everything else goes to stderr.\n"
      "Across machines run `hyperpipe launch --devices-here` on each host (the same --port, "
      "--master-addr and HYPERPIPE_JOB_TOKEN), or `hyperpipe train` under torchrun "
      "--no-python, mpirun or srun. An elastic run across machines: `hyperpipe launch "
      "--elastic --devices-here` on one host (--master-addr: its address) and `hyperpipe "
      "agent` on each other.\n"
      "Example:\n"
      "  hyperpipe launch --plan examples/plans/tiny-gpt-3stage.json "
      "--data examples/data/corpus.txt --steps 20");
  command->callback([args, command, &out, &err] {
    const auto checked = plan::load_checked_plan(
        args->plan, launch::value_of(command->remaining(), train_flags::kCluster));
    const plan::Plan& plan = checked.plan;
    launch::LaunchSpec spec;
    spec.ranks = plan::ranks_of_devices(plan, args->devices_here);
    spec.processes = static_cast<int>(spec.ranks.size());
    spec.world_size = static_cast<int>(plan::devices_in_rank_order(plan).size());
    const bool shared = spec.processes < spec.world_size;
    // The launcher's own options first, then the plan against the devices' memory (both
    // without the worker), then what every process would check.
    if (shared) check_shared_run(*args, launch::given(command->remaining(), train_flags::kAdapt));
    plan::check_runs_here(plan, args->plan);
    check_fits(*args, checked, command->remaining());
    check_before_launch(*args, command->remaining(), err);
    spec.command = {require_worker("launch"), "train"};
    launch::append(spec.command, train_flags::kPlan, args->plan);
    for (const auto& extra : command->remaining()) spec.command.push_back(extra);
    if (shared && args->elastic) {
      args->elastic_settings.devices_here = args->devices_here;
      args->elastic_settings.address = args->master_address;
      args->elastic_settings.port = args->port;
    }
    spec.address = args->master_address;
    spec.port = args->port;
    const bool hosts_store = spec.ranks.front() == 0;  // rank 0 listens for the others
    if (spec.port > 0 && hosts_store && !launch::port_is_free(spec.port)) {
      throw InputError("--port", std::to_string(spec.port),
                       fmt::format("a free port for the rendezvous: {} is in use (try --port {}, "
                                   "or leave --port out to pick a free one)",
                                   spec.port, launch::free_port()));
    }
    spec.grace = std::chrono::milliseconds(static_cast<int64_t>(args->grace_seconds * 1000));
    // Under --format json stdout holds rank 0's document alone; the rest goes to stderr.
    const bool json = launch::value_of(command->remaining(), train_flags::kFormat) == "json";
    if (json) spec.raw_stdout_rank = 0;
    (json ? err : out) << fmt::format("launching {} for {}{}{}\n",
                                      counted(spec.processes, "process", "processes"), args->plan,
                                      shared ? fmt::format(" (ranks {} of {}, the rest elsewhere)",
                                                           plan::format_devices(spec.ranks),
                                                           spec.world_size)
                                             : "",
                                      args->elastic ? " (elastic)" : "")
                       << std::flush;
    // A run that adapts its plan hands over to the next through the elastic launcher.
    if (args->elastic || launch::given(command->remaining(), train_flags::kAdapt)) {
      args->elastic_settings.worker = spec.command.front();
      elastic::launch_elastic(args->plan, command->remaining(), spec, args->elastic_settings, out,
                              err);
      return;
    }
    const auto result = launch::launch_processes(spec, out, err);
    if (result.signal && result.failed_rank < 0) {
      throw CommandFailed(fmt::format("stopped by {}: every worker stopped after its step",
                                      signal_name(result.signal)),
                          result.exit_code);
    }
    if (result.exit_code != 0) {
      throw CommandFailed(
          fmt::format("{}; the run stopped", launch::failure_summary(result, spec.world_size)),
          result.blamed_code != 0 ? result.blamed_code : result.exit_code);
    }
  });
}

}  // namespace hyperpipe::cli
