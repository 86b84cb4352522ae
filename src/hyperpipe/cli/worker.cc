#include "hyperpipe/cli/worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "hyperpipe/common/error.h"

namespace hyperpipe::cli {

std::optional<std::string> worker_path() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return std::nullopt;
  const auto path = (self.parent_path() / kWorkerName).string();
  if (::access(path.c_str(), X_OK) != 0) return std::nullopt;
  return path;
}

std::string require_worker(const std::string& command) {
  if (auto path = worker_path()) return *path;
  throw InputError(
      command, "",
      fmt::format(
          "{} beside hyperpipe: this build plans only (it was built without "
          "libtorch); run scripts/install-deps.sh (PyPI's torch) and rebuild for train, launch "
          "and profile",
          kWorkerName));
}

void exec_worker(const std::string& command, int argc, const char* const* argv) {
  const std::string path = require_worker(command);
  std::vector<char*> arguments;
  arguments.push_back(const_cast<char*>(path.c_str()));
  for (int i = 1; i < argc; ++i) arguments.push_back(const_cast<char*>(argv[i]));
  arguments.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  ::execv(path.c_str(), arguments.data());
  throw CommandFailed(fmt::format("cannot start {}: {}", path, std::strerror(errno)),
                      kExitInternalError);
}

CLI::App* add_worker_subcommand(CLI::App& app, const WorkerCommand& command) {
  return app.add_subcommand(command.name, command.summary);
}

AddCommand worker_command(const WorkerCommand& worker, int argc, const char* const* argv) {
  const std::string name = worker.name;
  return [worker, name, argc, argv](CLI::App& app, std::ostream&, std::ostream&) {
    CLI::App* command = add_worker_subcommand(app, worker);
    // Everything after the command, --help included, is the worker's to parse.
    command->set_help_flag();
    command->prefix_command();
    command->allow_extras();
    command->fallthrough(false);  // every argument is the worker's
    command->callback([name, argc, argv] { exec_worker(name, argc, argv); });
  };
}

}  // namespace hyperpipe::cli
