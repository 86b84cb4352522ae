// A worker started by `hyperpipe launch` dies with its launcher: were the launcher killed
// outright (SIGKILL, an OOM kill), its workers would otherwise train on as orphans.
#pragma once

namespace hyperpipe::launch {

// Set by the launcher in every worker's environment: the launcher's process id.
inline constexpr const char* kLauncherPidVariable = "HYPERPIPE_LAUNCHER_PID";

// Where kLauncherPidVariable is set: asks the kernel for SIGTERM when the parent exits
// (PR_SET_PDEATHSIG; the worker then stops as on any stop signal) and returns false if the
// launcher is already gone (the worker should exit). True where it is not set (started by
// torchrun, mpirun or srun, which watch their own children).
bool die_with_launcher();

}  // namespace hyperpipe::launch
