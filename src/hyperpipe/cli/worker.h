// `hyperpipe` itself never loads libtorch, so the planning commands start in milliseconds.
// The commands that run tensors (train, profile) live in a second executable,
// hyperpipe-worker, installed beside it; `hyperpipe train …` becomes that program with the
// same arguments, so torchrun/mpirun/srun lines that name `hyperpipe train` keep working.
#pragma once

#include <optional>
#include <string>

#include "hyperpipe/cli/app.h"

namespace hyperpipe::cli {

// The executable's file name, beside `hyperpipe` in the build tree and when installed.
inline constexpr const char* kWorkerName = "hyperpipe-worker";

// The worker beside the running executable, if it is there and executable.
std::optional<std::string> worker_path();

// The worker's path, or InputError naming `command` and saying this build plans only.
std::string require_worker(const std::string& command);

// Replaces this process by the worker with the same arguments (argv[0] aside); returns
// only by throwing CommandFailed when it cannot.
[[noreturn]] void exec_worker(const std::string& command, int argc, const char* const* argv);

// A command the worker runs, named once: `hyperpipe`'s help lists it with this summary
// without starting the worker, and the worker's own help says the same.
struct WorkerCommand {
  const char* name;
  const char* summary;
};
inline constexpr WorkerCommand kProfileCommand{
    "profile", "Measure each layer kind of a model on this device into a profile database"};
inline constexpr WorkerCommand kTrainCommand{
    "train", "Train with a plan: this process's device of it (see `hyperpipe launch`)"};
inline constexpr WorkerCommand kExportCheckpointCommand{
    "export-checkpoint",
    "Write a training checkpoint as a Hugging Face checkpoint (config.json + safetensors)"};

// The worker's `command` as a subcommand of `hyperpipe`: listed in the help with its
// summary, every argument after it (--help included) left to the worker.
AddCommand worker_command(const WorkerCommand& command, int argc, const char* const* argv);

// The worker's `command` registered on its app (the worker's own parser).
CLI::App* add_worker_subcommand(CLI::App& app, const WorkerCommand& command);

}  // namespace hyperpipe::cli
