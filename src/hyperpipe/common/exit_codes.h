// How a HyperPipe process ends: the exit codes every command, worker and launcher agrees
// on, and the error that carries one (0 success, 2 bad input or usage, 1 an internal
// failure, 75 a hand-over to another plan).
#pragma once

#include <stdexcept>
#include <string>

namespace hyperpipe {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternalError = 1;
inline constexpr int kExitBadInput = 2;
// A run that checkpointed and ended to go on with another plan (train --adapt):
// sysexits.h's EX_TEMPFAIL, "a temporary failure; the user is invited to retry".
inline constexpr int kExitPlanSwitch = 75;

// A command that ran and failed (a training process that lost a peer, a launched process
// that exited non-zero): exits with `code` after "error: MESSAGE" (nothing when the
// message is empty: another process has said what failed).
class CommandFailed : public std::runtime_error {
 public:
  CommandFailed(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

}  // namespace hyperpipe
