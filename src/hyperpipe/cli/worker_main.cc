// hyperpipe-worker: the commands that load libtorch (train, profile, export-checkpoint),
// started by `hyperpipe` with the user's arguments (worker.h) and by `hyperpipe launch`.
#include <fmt/format.h>

#include <iostream>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/runtime/runtime_info.h"
#include "hyperpipe/tokenizers/sentencepiece_tokenizer.h"

int main(int argc, char** argv) {
  namespace cli = hyperpipe::cli;
  // train --tokenizer X.model reads text through SentencePiece in every rank.
  hyperpipe::tokenizers::enable_sentencepiece_models();
  cli::Program program;
  program.commands = {cli::add_profile_command, cli::add_train_command,
                      cli::add_export_checkpoint_command};
  program.version = [] {
    const auto info = hyperpipe::runtime::runtime_info();
    if (!info.built_with_cuda) {
      return fmt::format(
          "hyperpipe {}\nruntime: libtorch {}\nCUDA: no (a CPU build of libtorch)"
          "\nNCCL: no (Gloo only)",
          cli::hyperpipe_version(), info.libtorch_version);
    }
    return fmt::format(
        "hyperpipe {}\nruntime: libtorch {}\nCUDA: compiled in (runtime {}); {}\nNCCL: compiled "
        "in ({})",
        cli::hyperpipe_version(), info.libtorch_version, info.cuda_runtime,
        info.cuda_devices > 0 ? fmt::format("{} GPU(s) visible", info.cuda_devices)
                              : std::string("no GPU visible here"),
        info.nccl_version);
  };
  return cli::run(argc, argv, std::cout, std::cerr, program);
}
