// The `hyperpipe` command: argument parsing, dispatch, and the mapping of errors to exit
// codes (0 success, 2 bad input or usage, 1 an internal failure).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hyperpipe::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternalError = 1;
inline constexpr int kExitBadInput = 2;
// A run that checkpointed and ended to go on with another plan (train --adapt):
// sysexits.h's EX_TEMPFAIL, "a temporary failure; the user is invited to retry".
inline constexpr int kExitPlanSwitch = 75;

// A command that ran and failed (a training process that lost a peer, a launched process
// that exited non-zero): its message, and the exit code to end with.
// A command that ran and failed: exits with `code` after "error: MESSAGE" (nothing when the
// message is empty: another process has said what failed).
class CommandFailed : public std::runtime_error {
 public:
  CommandFailed(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// Registers a subcommand on the app; its output goes to the streams.
using AddCommand = std::function<void(CLI::App&, std::ostream& out, std::ostream& err)>;

// One executable's commands: `hyperpipe` (planning, and the worker's commands handed on)
// or `hyperpipe-worker` (the commands that load libtorch).
struct Program {
  std::vector<AddCommand> commands;
  std::function<std::string()> version;  // what --version prints
  // `help COMMAND` for a command another program parses (the worker's train, profile,
  // export-checkpoint: they take every argument as their own): hands the help over to it.
  std::function<void(const std::string& command)> help_elsewhere;
};

// The version of this source tree (CMake's project version).
std::string hyperpipe_version();

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
        const Program& program);

}  // namespace hyperpipe::cli
