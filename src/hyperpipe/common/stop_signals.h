// SIGINT, SIGTERM and SIGHUP as a request to stop, not an instant death: while a
// StopSignals is alive the first of them only sets a flag that the launcher or the training
// loop reads at a safe point (the launcher forwards it, a worker finishes its step and
// checkpoint). A second signal of the same kind ends the process at once, as it would
// without the handler, so an impatient Ctrl-C Ctrl-C still works.
#pragma once

#include <string>

namespace hyperpipe {

// After a stop request a process that has not exited within this many seconds is ended by
// SIGALRM: a worker blocked on a peer that will never answer does not outlive its run.
inline constexpr unsigned kStopGraceSeconds = 60;

class StopSignals {
 public:
  // `arm_alarm`: whether a stop request also arms the kStopGraceSeconds alarm.
  explicit StopSignals(bool arm_alarm);
  ~StopSignals();  // restores the previous handlers
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first stop signal received (SIGINT, SIGTERM, SIGHUP), or 0.
  static int received();
  // How many stop signals arrived.
  static int count();
};

// "SIGINT", "SIGTERM", "SIGHUP", or "signal N".
std::string signal_name(int signal_number);

}  // namespace hyperpipe
