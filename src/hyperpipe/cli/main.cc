#include <iostream>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"

int main(int argc, char** argv) {
  std::vector<hyperpipe::cli::AddCommand> runtime_commands;
#ifdef HYPERPIPE_WITH_RUNTIME
  runtime_commands = {hyperpipe::cli::add_profile_command, hyperpipe::cli::add_train_command,
                      hyperpipe::cli::add_launch_command};
#endif
  return hyperpipe::cli::run(argc, argv, std::cout, std::cerr, runtime_commands);
}
