// `hyperpipe`: the planning commands, `launch`, and the worker's commands handed on to
// hyperpipe-worker (worker.h). Nothing here loads libtorch.
#include <iostream>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/worker.h"
#include "hyperpipe/tokenizers/sentencepiece_tokenizer.h"

namespace {

using hyperpipe::cli::AddCommand;

AddCommand planning(void (*add)(CLI::App&, std::ostream&)) {
  return [add](CLI::App& app, std::ostream& out, std::ostream&) { add(app, out); };
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = hyperpipe::cli;
  const char* const* args = argv;
  // Safe here: this process never loads libtorch (tokenizers/tokenizer.h).
  hyperpipe::tokenizers::enable_sentencepiece_models();
  cli::Program program;
  program.commands = {
      planning(cli::add_models_command),
      planning(cli::add_devices_command),
      planning(cli::add_describe_command),
      planning(cli::add_schedule_command),
      cli::add_plan_command,
      planning(cli::add_simulate_command),
      planning(cli::add_compare_command),
      planning(cli::add_export_command),
      planning(cli::add_tokenize_command),
      cli::worker_command(cli::kProfileCommand, argc, args),
      cli::worker_command(cli::kTrainCommand, argc, args),
      cli::worker_command(cli::kExportCheckpointCommand, argc, args),
      cli::add_launch_command,
      planning(cli::add_join_command),
      cli::add_agent_command,
  };
  // `hyperpipe help train` is the worker's `help train` (its options), as `train --help` is.
  program.help_elsewhere = [argc, args](const std::string& command) {
    cli::exec_worker(command, argc, args);
  };
  program.version = [argc, args]() -> std::string {
    // The worker knows the libtorch it loads and whether CUDA and NCCL work here.
    if (cli::worker_path()) cli::exec_worker("--version", argc, args);
    return "hyperpipe " + cli::hyperpipe_version() +
           "\nruntime: none, planning only (built without libtorch: no train, launch or "
           "profile)";
  };
  return cli::run(argc, args, std::cout, std::cerr, program);
}
