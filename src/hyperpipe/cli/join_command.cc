// `hyperpipe join`: tells a running `hyperpipe launch --elastic` that devices of its cluster
// are there again (a GPU back from repair, a node back from maintenance); it answers
// whether and when the run takes them (elastic_join.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/elastic_join.h"
#include "hyperpipe/cli/elastic_launch.h"
#include "hyperpipe/common/error.h"

namespace hyperpipe::cli {
namespace {

// How often the answers are looked for: the launcher looks for requests as often.
constexpr auto kAnswerPoll = std::chrono::milliseconds(100);

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
    const std::string elastic_dir =
        (std::filesystem::path(args->checkpoint_dir) / kElasticDirectory).string();
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(args->wait_seconds * 1e3));
    // A launcher started a moment ago (in a script, `launch … & join …`) makes the directory
    // only once its checks pass: wait for it as for the answer.
    while (!std::filesystem::is_directory(elastic_dir) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kAnswerPoll);
    }
    if (!std::filesystem::is_directory(elastic_dir)) {
      throw InputError("--checkpoint-dir", args->checkpoint_dir,
                       fmt::format("the --checkpoint-dir of a running `hyperpipe launch "
                                   "--elastic` (it has no {}/ directory after {} s)",
                                   kElasticDirectory, args->wait_seconds));
    }
    for (int device : args->devices) request_join(elastic_dir, device);
    std::map<int, JoinAnswer> answers;
    while (answers.size() < args->devices.size() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kAnswerPoll);
      for (int device : args->devices) {
        if (answers.count(device)) continue;
        if (auto answer = join_answer(elastic_dir, device)) answers[device] = *answer;
      }
    }
    std::vector<int> refused;
    for (int device : args->devices) {
      // Answered, or given up on (a launcher started later must not take it): done with.
      withdraw_join(elastic_dir, device);
      const auto found = answers.find(device);
      if (found == answers.end()) continue;
      out << fmt::format("device {}: {}: {}\n", device,
                         found->second.accepted ? "taken" : "refused", found->second.message);
      if (!found->second.accepted) refused.push_back(device);
    }
    if (answers.size() < args->devices.size()) {
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
