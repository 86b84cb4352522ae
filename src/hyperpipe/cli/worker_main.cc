// hyperpipe-worker: the commands that load libtorch (train, profile, export-checkpoint),
// started by `hyperpipe` with the user's arguments (worker.h) and by `hyperpipe launch`.
#include <fmt/format.h>

#include <iostream>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/runtime/runtime_info.h"

int main(int argc, char** argv) {
  namespace cli = hyperpipe::cli;
  cli::Program program;
  program.commands = {cli::add_profile_command, cli::add_train_command,
                      cli::add_export_checkpoint_command};
  program.version = [] {
    const auto info = hyperpipe::runtime::runtime_info();
    return fmt::format(
        "hyperpipe {}\nruntime: libtorch {}\nCUDA: {}\nNCCL: {}", cli::hyperpipe_version(),
        info.libtorch_version,
        !info.built_with_cuda   ? "no (a CPU build of libtorch)"
        : info.cuda_devices > 0 ? fmt::format("yes, {} device(s) visible", info.cuda_devices)
                                : "built in, but no device visible",
        info.built_with_cuda ? "yes (the communicator's CUDA path)" : "no (Gloo only)");
  };
  return cli::run(argc, argv, std::cout, std::cerr, program);
}
