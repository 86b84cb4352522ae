// `hyperpipe join`: tells a running `hyperpipe launch --elastic` that devices of its cluster
// are there again (a GPU back from repair, a node back from maintenance); it answers
// whether and when the run takes them (elastic/joins.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/elastic/elastic_run.h"
#include "hyperpipe/elastic/joins.h"

namespace hyperpipe::cli {
namespace {

struct JoinArgs {
  std::string checkpoint_dir;
  std::vector<int> devices;
  double wait_seconds = 30;
};

}  // namespace

void add_join_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<JoinArgs>();
  CLI::App* command = app.add_subcommand(
      "join",
      "Offer devices to a running `hyperpipe launch --elastic`: it plans again with them "
      "at its next checkpoint, where that is faster");
  command
      ->add_option("--checkpoint-dir", args->checkpoint_dir, "The elastic run's --checkpoint-dir")
      ->required();
  command->add_option("--device", args->devices, "A device of the run's cluster, by id")
      ->required()
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--wait", args->wait_seconds,
                   "Seconds to wait for the run's launcher (one starting up too) to answer")
      ->default_val(30.0)
      ->check(CLI::PositiveNumber);
  command->footer(
      "Exit 0 when every device was taken (into the next plan, or as a spare the run plans "
      "with after a loss), 2 when one was refused, 1 when no launcher answered.\n"
      "Example:\n"
      "  hyperpipe join --checkpoint-dir run/checkpoints --device 1");
  command->callback([args, &out] {
    const std::string elastic_dir = elastic::elastic_directory(args->checkpoint_dir);
    const auto answers = elastic::offer_and_wait(elastic_dir, args->devices, args->wait_seconds);
    if (!answers) {
      throw InputError("--checkpoint-dir", args->checkpoint_dir,
                       fmt::format("the --checkpoint-dir of a running `hyperpipe launch "
                                   "--elastic` (it has no {}/ directory after {} s)",
                                   elastic::kElasticDirectory, args->wait_seconds));
    }
    std::vector<int> refused;
    for (int device : args->devices) {
      const auto found = answers->find(device);
      if (found == answers->end()) continue;
      out << fmt::format("device {}: {}: {}\n", device,
                         found->second.accepted ? "taken" : "refused", found->second.message);
      if (!found->second.accepted) refused.push_back(device);
    }
    if (answers->size() < args->devices.size()) {
      throw CommandFailed(
          fmt::format("no elastic launcher answered in {} s: is `hyperpipe launch --elastic "
                      "--checkpoint-dir {}` running?",
                      args->wait_seconds, args->checkpoint_dir),
          kExitInternalError);
    }
    if (!refused.empty()) {
      throw CommandFailed(fmt::format("{} of the devices offered refused (above)", refused.size()),
                          kExitBadInput);
    }
  });
}

}  // namespace hyperpipe::cli
