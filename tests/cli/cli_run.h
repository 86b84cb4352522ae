// Runs a HyperPipe executable as a user does, through the shell, and keeps what it printed.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "test_files.h"

namespace hyperpipe::cli::testing {

struct Result {
  int exit_code = -1;
  bool exited_normally = false;
  std::string out;
  std::string err;
};

using hyperpipe::testing::slurp;

// The repository's examples/ folder, where the commands' example inputs are.
inline const std::string kExamples = HYPERPIPE_EXAMPLES;

// `binary args`, with stdin closed; `prefix` goes before it (variables, `cd dir &&`).
inline Result run_binary(const std::string& binary, const std::string& args,
                         const std::string& prefix = "") {
  const std::string out_path = hyperpipe::testing::temp_path("cli-out.txt");
  const std::string err_path = hyperpipe::testing::temp_path("cli-err.txt");
  const std::string command =
      prefix + binary + " " + args + " >" + out_path + " 2>" + err_path + " </dev/null";
  const int status = std::system(command.c_str());
  Result result;
  result.exited_normally = WIFEXITED(status);
  result.exit_code = result.exited_normally ? WEXITSTATUS(status) : -1;
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

// `hyperpipe args`.
inline Result run(const std::string& args) {
  return run_binary(HYPERPIPE_BINARY, args);
}

}  // namespace hyperpipe::cli::testing
