// `hyperpipe export`: a plan in the terms of the framework that will run it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/exporter/export.h"
#include "hyperpipe/plan/checked_plan.h"

namespace hyperpipe::cli {
namespace {

struct ExportArgs {
  std::string plan;
  std::string target;
  std::string out;
  OutputFormat format = OutputFormat::table;
};

// The "hyperpipe.export/1" summary: what was written where, for which framework.
constexpr const char* kExportFormat = "hyperpipe.export/1";

void run_export(const ExportArgs& args, std::ostream& out) {
  const auto [plan, model, cluster] = plan::load_checked_plan(args.plan, std::nullopt);
  const auto target = *plan::parse_framework(args.target);
  // Everything is worked out before the first file is written.
  const auto files = exporter::export_plan(plan, model, cluster, target);
  const std::filesystem::path folder(args.out);
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error || !std::filesystem::is_directory(folder)) {
    throw InputError("--out", args.out, "a folder that can be made and written");
  }
  for (const auto& file : files) write_file_atomically((folder / file.name).string(), file.text);
  const auto& traits = plan::traits(target);
  if (args.format == OutputFormat::json) {
    nlohmann::json written = nlohmann::json::array();
    for (const auto& file : files) {
      written.push_back({{"path", (folder / file.name).string()},
                         {"bytes", static_cast<uint64_t>(file.text.size())}});
    }
    out << nlohmann::json{{"format", kExportFormat},
                          {"plan", args.plan},
                          {"to", args.target},
                          {"framework", traits.display_name},
                          {"version", traits.version},
                          {"costed_for", plan::to_string(plan.runtime)},
                          {"files", written}}
               .dump(2)
        << '\n';
    return;
  }
  out << fmt::format("{} exported for {} ({}) into {}:\n", args.plan, traits.display_name,
                     traits.version, args.out);
  for (const auto& file : files) out << "  " << (folder / file.name).string() << '\n';
  if (plan.runtime != target) {
    out << fmt::format(
        "note: the plan was costed for {}; `hyperpipe simulate --plan {} --runtime {}` predicts "
        "it as {} runs it\n",
        plan::traits(plan.runtime).display_name, args.plan, args.target, traits.display_name);
  }
}

}  // namespace

void add_export_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* command = app.add_subcommand(
      "export", "Write a plan as Megatron-LM, DeepSpeed or torchtitan settings, ranks placed");
  command->add_option("--plan,-p", args->plan, "Plan file (docs/formats.md)")->required();
  command
      ->add_option("--to", args->target,
                   "The framework: megatron (arguments), deepspeed (config and partition), "
                   "torchtitan (TOML); each with a rankfile and torchrun lines")
      ->required()
      ->check(CLI::IsMember({"megatron", "deepspeed", "torchtitan"}));
  command->add_option("--out,-o", args->out, "Folder to write the files into")->required();
  add_format_option(*command, args->format);
  command->footer(
      "Examples:\n"
      "  hyperpipe plan --global-batch 64 --runtime megatron --out plan.json\n"
      "  hyperpipe export --plan plan.json --to megatron --out megatron/\n"
      "  mpirun --rankfile megatron/rankfile ... pretrain_gpt.py "
      "\"${HYPERPIPE_MEGATRON_ARGS[@]}\"");
  command->callback([args, &out] { run_export(*args, out); });
}

}  // namespace hyperpipe::cli
