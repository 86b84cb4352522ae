// Launching a plan's processes on this machine (`hyperpipe launch`): which of its ranks run
// here and where they meet, and what is checked before any of them starts, so that a
// refusal comes once, with its reason, instead of once per rank after minutes of start-up.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/plan/checked_plan.h"

namespace hyperpipe::launch {

struct PlanLaunch {
  std::string plan_path;
  std::vector<int> devices_here;  // empty: every device of the plan
  std::string address = "127.0.0.1";
  int port = 0;  // 0: a free one
  double grace_seconds = 5;
  bool elastic = false;
  bool force = false;                        // launch a plan predicted not to fit
  std::vector<std::string> train_arguments;  // passed on to every `train`
  std::string worker;                        // the program that runs `train`
};

// A run whose processes several launchers start (devices_here, one launcher per host)
// meets at one address and port under one secret every host's environment holds:
// InputError for one that lacks the port or the secret, or that adapts its plan (--adapt)
// without the elastic leader. Nothing to check for a run this launcher starts whole.
void check_shared_run(const plan::Plan& plan, const PlanLaunch& launch);

// The processes of `plan` this launcher starts: its ranks, the worker's `train` command,
// where they meet (after check_shared_run).
LaunchSpec launch_spec(const plan::Plan& plan, const PlanLaunch& launch);

// A plan whose predicted peak (in the dtype and with the profiles the run is given) exceeds
// a device's memory less the margin fails at launch or later: InputError naming each such
// device and its terms, unless launch.force.
void check_fits(const plan::CheckedPlan& checked, const PlanLaunch& launch);

// Pre-flight: one `train --check` checks what every process would check alone (options,
// plan, data and its token ids, checkpoint directory, dtype and this machine's kernels).
// Its message goes to `err`; CommandFailed with its exit code where it refuses.
void check_before_launch(const PlanLaunch& launch, std::ostream& err);

// InputError where rank 0 listens here on a port another program holds.
void check_port_free(const LaunchSpec& spec);

// Whether the run prints one JSON document (`--format json`): then stdout holds rank 0's
// alone and the launcher's own lines go to stderr.
bool prints_json(const PlanLaunch& launch);

// The entries of a `--help` text's "Options:" section (CLI11's layout: "  -x,--name …" or
// "  --name …", then lines indented deeper), less -h and those named in `own`.
std::string options_without(const std::string& help, const std::vector<std::string>& own);

// What `launch --help` lists of train's options: those the worker's `train --help` prints
// that the launcher (`own`: its option names) does not take itself; "" where the worker
// cannot say.
std::string options_passed_on(const std::string& worker, const std::vector<std::string>& own);

}  // namespace hyperpipe::launch
