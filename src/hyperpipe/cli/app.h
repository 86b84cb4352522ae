// The `hyperpipe` command: argument parsing, dispatch, and the mapping of errors to exit
// codes (0 success, 2 bad input or usage, 1 an internal failure).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/common/exit_codes.h"

namespace hyperpipe::cli {

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
