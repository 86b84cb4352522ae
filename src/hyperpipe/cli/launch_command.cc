// `hyperpipe launch`: the processes of a plan's run on this machine, like torchrun: one
// `hyperpipe train` (hyperpipe-worker) per device, output prefixed by rank, all stopped if one
// fails. With --devices-here, this host's share of a run across hosts, each host running a
// launcher of its own.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/worker.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/elastic/elastic_run.h"
#include "hyperpipe/launch/plan_launch.h"
#include "hyperpipe/launch/worker_arguments.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::cli {

namespace train_flags = launch::train_flags;
namespace {

struct LaunchArgs {
  launch::PlanLaunch launch;
  elastic::ElasticSettings elastic_settings;
};

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
  std::vector<std::string> own;
  for (const auto* option : launch_command.get_options()) {
    for (const auto& name : option->get_lnames()) own.push_back("--" + name);
  }
  const std::string passed_on = launch::options_passed_on(*worker, own);
  if (passed_on.empty()) return "Options of `hyperpipe train`: see `hyperpipe help train`.\n";
  return "Options passed to each process's `hyperpipe train`:\n" + passed_on;
}

}  // namespace

void add_launch_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto args = std::make_shared<LaunchArgs>();
  CLI::App* command = app.add_subcommand(
      "launch", "Run a plan on this machine: one `hyperpipe train` process per device");
  command->add_option("--plan", args->launch.plan_path, "Plan file")->required();
  command->add_option("--port", args->launch.port, "Rendezvous port (default: a free one)")
      ->check(CLI::Range(1, 65535));
  command
      ->add_option("--devices-here", args->launch.devices_here,
                   "Start only these devices' processes (a run across hosts: every host runs "
                   "a launcher for its devices, with the same --master-addr, --port and "
                   "HYPERPIPE_JOB_TOKEN)")
      ->delimiter(',');
  command
      ->add_option("--master-addr", args->launch.address,
                   "Address of the host of rank 0 (the first device in plan order), where the "
                   "run meets")
      ->default_val("127.0.0.1");
  command
      ->add_option("--grace", args->launch.grace_seconds,
                   "Seconds the others get to stop after one fails, before they are killed")
      ->default_val(5.0)
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--elastic", args->launch.elastic,
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
  command->add_flag("--force", args->launch.force,
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
    launch::PlanLaunch& run = args->launch;
    run.train_arguments = command->remaining();
    const auto checked = plan::load_checked_plan(
        run.plan_path, launch::value_of(run.train_arguments, train_flags::kCluster));
    // The launcher's own options first, then the plan against the devices' memory (both
    // without the worker), then what every process would check.
    launch::check_shared_run(checked.plan, run);
    plan::check_runs_here(checked.plan, run.plan_path);
    launch::check_fits(checked, run);
    run.worker = require_worker("launch");
    launch::check_before_launch(run, err);
    const launch::LaunchSpec spec = launch::launch_spec(checked.plan, run);
    launch::check_port_free(spec);
    const bool shared = spec.processes < spec.world_size;
    (launch::prints_json(run) ? err : out)
        << fmt::format("launching {} for {}{}{}\n", counted(spec.processes, "process", "processes"),
                       run.plan_path,
                       shared ? fmt::format(" (ranks {} of {}, the rest elsewhere)",
                                            plan::format_devices(spec.ranks), spec.world_size)
                              : "",
                       run.elastic ? " (elastic)" : "")
        << std::flush;
    // A run that adapts its plan hands over to the next through the elastic launcher.
    if (run.elastic || launch::given(run.train_arguments, train_flags::kAdapt)) {
      auto& settings = args->elastic_settings;
      if (shared && run.elastic) {
        settings.devices_here = run.devices_here;
        settings.address = run.address;
        settings.port = run.port;
      }
      settings.worker = run.worker;
      elastic::launch_elastic(run.plan_path, run.train_arguments, spec, settings, out, err);
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
