#include "hyperpipe/cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/nearest_name.h"
#include "hyperpipe/common/text_excerpt.h"

namespace hyperpipe::cli {

std::string hyperpipe_version() {
  return HYPERPIPE_VERSION;
}

namespace {

// --format belongs to each command that has it; given before the command, it moves after
// it (`hyperpipe --format json plan …` as `hyperpipe plan --format json …`). --log-level
// is the program's own and stays: the commands let it through (fallthrough).
constexpr std::string_view kCommandsOption = "--format";
constexpr std::string_view kProgramOption = "--log-level";

bool is_option(const std::string& arg, std::string_view name) {
  return arg == name || arg.rfind(std::string(name) + "=", 0) == 0;
}

std::vector<std::string> command_first(int argc, const char* const* argv) {
  std::vector<std::string> kept, moved, rest;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool commands = is_option(arg, kCommandsOption);
    if (!commands && !is_option(arg, kProgramOption)) break;
    auto& into = commands ? moved : kept;
    into.push_back(arg);
    if (arg.find('=') == std::string::npos && i + 1 < argc) into.emplace_back(argv[++i]);
  }
  rest = kept;
  if (i < argc) rest.emplace_back(argv[i++]);  // the command
  rest.insert(rest.end(), moved.begin(), moved.end());
  for (; i < argc; ++i) rest.emplace_back(argv[i]);
  return rest;
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(command->get_name());
  }
  return names;
}

// "unknown option --micro-batchs for plan; did you mean --micro-batch?", for the options the
// command did not expect; empty when none looks like an option.
std::string unexpected_options(CLI::App& app) {
  const auto commands = app.get_subcommands();
  if (commands.empty()) return "";
  const CLI::App& command = *commands.front();
  std::vector<std::string> names;
  for (const auto* owner : {&command, static_cast<const CLI::App*>(&app)}) {
    for (const auto* option : owner->get_options()) {
      for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    }
  }
  std::string message;
  for (const auto& arg : app.remaining(/*recurse=*/true)) {
    if (arg.rfind("--", 0) != 0) continue;
    const std::string given = arg.substr(0, arg.find('='));
    message += (message.empty() ? "" : "\n") + std::string("error: unknown option ") +
               printable_message(given) + " for " + command.get_name() +
               did_you_mean(given, names) + " (`hyperpipe help " + command.get_name() +
               "` lists its options)";
  }
  return message;
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
        const Program& program) {
  CLI::App app{
      "HyperPipe: plan and run pipeline-parallel training of transformers on mixed GPU "
      "clusters."};
  app.name("hyperpipe");
  app.require_subcommand(1);
  // Options a command does not know go to the program's (--log-level after the command).
  app.fallthrough();
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->default_str("warn");
  app.footer(
      "Examples:\n"
      "  hyperpipe models\n"
      "  hyperpipe devices\n"
      "  hyperpipe describe --model gpt3-2.7b --cluster examples/clusters/a100-v100-t4.yaml\n"
      "  hyperpipe plan --model gpt3-2.7b --cluster a100-v100-t4 --global-batch 64\n"
      "  hyperpipe schedule --kind 1f1b --stages 4 --micro-batches 8\n"
      "  hyperpipe simulate --plan examples/plans/gpt3-2.7b-4stage.json --svg timeline.svg\n"
      "  hyperpipe launch --plan examples/plans/tiny-gpt-3stage.json --data "
      "examples/data/corpus.txt --steps 20\n"
      "Run `hyperpipe COMMAND --help` for a command's options.");

  if (program.version) app.set_version_flag("--version", program.version);
  for (const auto& add : program.commands) add(app, out, err);
  // `hyperpipe help [COMMAND]`: the program's or the command's --help.
  std::string help_topic;
  CLI::App* help = app.add_subcommand("help", "Show the commands, or one command's options");
  help->add_option("command", help_topic, "The command")->check(CLI::IsMember(command_names(app)));
  help->callback([&] {
    if (help_topic.empty()) {
      out << app.help();
      return;
    }
    const CLI::App* command = app.get_subcommand(help_topic);
    // Its options are another program's: that program prints them.
    if (command->get_prefix_command() && program.help_elsewhere) {
      program.help_elsewhere(help_topic);
    }
    out << command->help(app.get_name());
  });

  app.parse_complete_callback([&] {
    if (!set_log_level(log_level)) {
      throw CLI::ValidationError("--log-level", "unknown level '" + log_level + "'");
    }
  });

  // Bare `hyperpipe`: what it can do, not a complaint that a command is missing.
  if (argc <= 1) {
    out << app.help();
    return kExitOk;
  }
  std::vector<std::string> args = command_first(argc, argv);
  // The command: the first argument past the program's --log-level.
  const auto command = std::find_if(args.begin(), args.end(), [&](const std::string& arg) {
    return arg.rfind('-', 0) != 0 && (&arg == &args.front() || *(&arg - 1) != kProgramOption);
  });
  if (command != args.end()) {
    const auto names = command_names(app);
    if (std::find(names.begin(), names.end(), *command) == names.end()) {
      err << "error: unknown command '" << printable_message(*command) << "'"
          << did_you_mean(*command, names) << " (`hyperpipe --help` lists them)\n";
      return kExitBadInput;
    }
  }
  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  } catch (const CLI::ExtrasError& error) {
    const std::string unknown = unexpected_options(app);
    if (unknown.empty()) return app.exit(error, out, err) == 0 ? kExitOk : kExitBadInput;
    err << unknown << '\n';
    return kExitBadInput;
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error, out, err);
    return code == 0 ? kExitOk : kExitBadInput;
  } catch (const InputError& error) {
    err << "error: " << printable_message(error.what()) << '\n';
    return kExitBadInput;
  } catch (const CommandFailed& error) {
    // An empty message: the failure has been reported already (by the process that failed).
    if (*error.what() != '\0') err << "error: " << printable_message(error.what()) << '\n';
    return error.code();
  } catch (const std::exception& error) {
    err << "internal error: " << printable_message(error.what()) << '\n';
    return kExitInternalError;
  }
  return kExitOk;
}

}  // namespace hyperpipe::cli
