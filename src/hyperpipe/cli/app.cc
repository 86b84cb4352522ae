#include "hyperpipe/cli/app.h"

#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/text_excerpt.h"

namespace hyperpipe::cli {

std::string hyperpipe_version() {
  return HYPERPIPE_VERSION;
}

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
        const Program& program) {
  CLI::App app{
      "HyperPipe: plan and run pipeline-parallel training of transformers on mixed GPU "
      "clusters."};
  app.name("hyperpipe");
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->default_str("warn");
  app.footer(
      "Examples:\n"
      "  hyperpipe models\n"
      "  hyperpipe devices\n"
      "  hyperpipe describe --model gpt3-2.7b --cluster examples/clusters/a100-v100-t4.yaml\n"
      "  hyperpipe plan --model gpt3-2.7b --cluster a100-v100-t4 --global-batch 64\n"
      "  hyperpipe schedule --kind 1f1b --stages 4 --microbatches 8\n"
      "  hyperpipe simulate --plan examples/plans/gpt3-2.7b-4stage.json --svg timeline.svg\n"
      "  hyperpipe launch --plan examples/plans/tiny-gpt-3stage.json --data "
      "examples/data/corpus.txt --steps 20\n"
      "Run `hyperpipe COMMAND --help` for a command's options.");

  if (program.version) app.set_version_flag("--version", program.version);
  for (const auto& add : program.commands) add(app, out, err);

  app.parse_complete_callback([&] {
    if (!set_log_level(log_level)) {
      throw CLI::ValidationError("--log-level", "unknown level '" + log_level + "'");
    }
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error, out, err);
    return code == 0 ? kExitOk : kExitBadInput;
  } catch (const InputError& error) {
    err << "error: " << printable_message(error.what()) << '\n';
    return kExitBadInput;
  } catch (const CommandFailed& error) {
    err << "error: " << printable_message(error.what()) << '\n';
    return error.code();
  } catch (const std::exception& error) {
    err << "internal error: " << printable_message(error.what()) << '\n';
    return kExitInternalError;
  }
  return kExitOk;
}

}  // namespace hyperpipe::cli
